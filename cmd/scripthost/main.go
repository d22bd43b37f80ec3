// Command scripthost runs sandboxed, durable handler workflows and approved plans, and
// lets operators inspect runs and mutations and resolve the ones whose outcome is
// unknown. It is the only place that picks concrete drivers (SQLite, goja, wazero).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/hostproc"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/observe"
)

// globals are the flags and streams every subcommand shares.
type globals struct {
	DBPath string
	// UnsafeCommands lets run_command run without an OS sandbox when none is here.
	UnsafeCommands bool
	Stdin          io.Reader
	Stdout         io.Writer
	Stderr         io.Writer
	// LogFormat is text or json (--log-format).
	LogFormat string
	// observer, when set, sees the ledger's commits and the host's runs (serve).
	observer atomic.Pointer[observe.Observer]
}

// logger returns the logger every command writes its log lines with, to stderr in
// the --log-format chosen.
func (g *globals) logger(level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if g.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(g.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(g.Stderr, opts))
}

// ledgerFiles are the ledger's files, which commands must not see even when the
// ledger is kept inside the workspace.
func (g *globals) ledgerFiles() []string {
	if g.shared() {
		return nil // a PostgreSQL ledger has no files here
	}
	abs, err := filepath.Abs(g.DBPath)
	if err != nil {
		return nil
	}
	return []string{abs, abs + "-wal", abs + "-shm", abs + "-journal", abs + ".lock"}
}

// errNoLedger: --db names a file that does not exist, and the command only reads or
// changes an existing ledger.
var errNoLedger = errors.New("no ledger")

// openStore opens the existing ledger named by --db. A missing file is refused rather
// than created: a mistyped --db must not look like an empty ledger. A postgres:// URL
// names a database several hosts share, which the first host creates the schema in.
func (g *globals) openStore(ctx context.Context) (ledger.Store, error) {
	if g.shared() {
		return g.createStore(ctx, false)
	}
	if _, err := os.Stat(g.DBPath); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s (check --db; scripthost run creates a ledger)", errNoLedger, g.DBPath)
	}
	return g.createStore(ctx, false)
}

// createStore opens the ledger named by --db, creating it when it does not exist: a
// PostgreSQL database for a postgres:// URL, an SQLite file otherwise. hostLock makes
// this process the one host that drives an SQLite file (see sqlite.Options.HostLock);
// hosts sharing a PostgreSQL ledger split its work with leases instead.
func (g *globals) createStore(ctx context.Context, hostLock bool) (ledger.Store, error) {
	if g.shared() {
		return postgres.Open(ctx, g.DBPath, postgres.Options{})
	}
	return sqlite.Open(ctx, g.DBPath, sqlite.Options{HostLock: hostLock, OnCommit: func(writes int, took time.Duration) {
		if o := g.observer.Load(); o != nil {
			o.OnCommit(writes, took)
		}
	}, OnSync: func(commits int, took time.Duration) {
		if o := g.observer.Load(); o != nil {
			o.OnSync(commits, took)
		}
	}})
}

// shared reports whether --db names a database several hosts share.
func (g *globals) shared() bool { return postgres.IsURL(g.DBPath) }

// dbEnv names the variable that gives --db its default.
const dbEnv = "SCRIPTHOST_DB"

func defaultDB() string {
	if v := os.Getenv(dbEnv); v != "" {
		return v
	}
	return "./scripthost.db"
}

// usageError marks a command-line mistake: exit code 2. cmd, when set, is the command
// whose usage line the CLI prints with the error.
type usageError struct {
	err error
	cmd *cobra.Command
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{err: fmt.Errorf(format, args...)} }

// Exit codes outside the error-class table (see README "Exit codes").
const (
	exitRefused = 7 // no such run/mutation/workflow, or a refused transition
	exitLedger  = 8 // the ledger file is locked, corrupt or newer than this binary
)

// exitCoder lets a command choose its exit code (the plan executor's codes).
type exitCoder interface{ ExitCode() int }

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "scripthost",
		Short:         "Run sandboxed, durable handler workflows",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.DBPath, "db", defaultDB(),
		"ledger: an SQLite file, or a postgres:// URL shared by several hosts (default $"+dbEnv+", else ./scripthost.db)")
	root.PersistentFlags().StringVar(&g.LogFormat, "log-format", "text", "log lines on stderr as text or json")
	root.PersistentFlags().BoolVar(&g.UnsafeCommands, "unsafe-commands", false, "run allowlisted commands without an OS sandbox when bubblewrap is not available (they can then read any file the host can)")
	root.Version = version()
	root.SetVersionTemplate("scripthost {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err, c} })
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if g.LogFormat != "text" && g.LogFormat != "json" {
			return usageError{fmt.Errorf("--log-format %q: want text or json", g.LogFormat), c}
		}
		return nil
	}
	for _, add := range commands {
		root.AddCommand(add(g))
	}
	markUsage(root)
	return root
}

// markUsage makes argument-count errors usage errors (exit 2) on every command.
func markUsage(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return usageError{fmt.Errorf("%s: %w", c.CommandPath(), err), c}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		markUsage(sub)
	}
}

// commands are the subcommand constructors; each file registers its own in init.
var commands []func(*globals) *cobra.Command

func main() {
	hostproc.Tune()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs the CLI and returns its exit code; tests call it directly.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{Stdin: stdin, Stdout: stdout, Stderr: stderr}
	root := newRoot(g)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return scripthost.ExitOK
	}
	msg := edgeMessage(err)
	if !strings.HasPrefix(msg, "scripthost") {
		msg = "scripthost: " + msg
	}
	fmt.Fprintln(stderr, msg)
	// A mistake in the command line itself gets the command's usage line and a hint.
	var ue usageError
	if errors.As(err, &ue) && ue.cmd != nil {
		cmd = ue.cmd
	}
	if (ue.cmd != nil || strings.HasPrefix(err.Error(), "unknown command")) && cmd != nil {
		fmt.Fprintf(stderr, "Usage: %s\nRun '%s --help' for more.\n", cmd.UseLine(), cmd.CommandPath())
	}
	return exitCode(err)
}

// internalPrefix matches what the user of the CLI has no use for in a message: the Go
// package an error passed through ("sandbox/js: ", "hostfuncs: ") and the internal
// name of a tool's schema.
var internalPrefix = regexp.MustCompile(`(^|: |\n)(?:(?:sandbox/js|sandbox/wasm|sandbox|hostfuncs|httptool|workspace|command|runtime|host|sqlite|ledger|fixture|types|dts): )+|"?mem:///schema\.json#?"? ?`)

// edgeMessage is err as the CLI prints it: without package prefixes.
func edgeMessage(err error) string {
	return internalPrefix.ReplaceAllString(err.Error(), "$1")
}

// version is the module's version and VCS revision, as the Go toolchain stamped them.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown version)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev != "" && v == "(devel)" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + rev + modified
	}
	return v + " " + bi.GoVersion
}

// exitCode is the one table from errors to exit codes; see README "Exit codes".
func exitCode(err error) int {
	var ue usageError
	var ec exitCoder
	var se *scripthost.Error
	switch {
	case err == nil:
		return scripthost.ExitOK
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown command"):
		return scripthost.ExitUsage
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.Is(err, ledger.ErrLocked), errors.Is(err, ledger.ErrNotLedger), errors.Is(err, ledger.ErrSchemaTooNew),
		errors.Is(err, ledger.ErrNoSpace), errors.Is(err, ledger.ErrReadOnly), errors.Is(err, errNoLedger):
		return exitLedger
	case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrIllegalTransition), errors.Is(err, agent.ErrNotPending):
		return exitRefused
	case errors.As(err, &se):
		return scripthost.ExitCode(err)
	default:
		return scripthost.ExitGeneral
	}
}
