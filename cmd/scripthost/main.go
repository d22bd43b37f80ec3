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
	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/internal/hostproc"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/observe"
)

// globals are the flags and streams every subcommand shares.
type globals struct {
	DBPath string
	// dbDefault: neither --db nor $SCRIPTHOST_DB chose the ledger.
	dbDefault bool
	// UnsafeCommands lets run_command run without an OS sandbox when none is here.
	UnsafeCommands bool
	Stdin          io.Reader
	Stdout         io.Writer
	Stderr         io.Writer
	// LogFormat is text or json (--log-format).
	LogFormat string
	// DBConns caps the connections to a PostgreSQL ledger (--db-conns); 0 for the
	// store's default.
	DBConns int
	// observer, when set, sees the ledger's commits and the host's runs (serve).
	observer atomic.Pointer[observe.Observer]
	// recordCalls logs every read tool call for replay (run and serve --record-calls).
	recordCalls bool
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

// reachableFiles are the files of the ledger no tool or command may reach: an SQLite
// ledger's database and every file beside it, or, for a PostgreSQL ledger, the token
// serve generates in the user's configuration directory.
func (g *globals) reachableFiles() []string {
	if !g.shared() {
		return host.LedgerFiles(g.DBPath)
	}
	if p, err := tokenPath(g); err == nil {
		return []string{p}
	}
	return nil
}

// keepLedgerOut refuses a workspace that contains the ledger or a file beside it
// (see host.CheckWorkspace). Every command that gives tools a workspace calls it
// before it opens the ledger, so that a refused start creates and changes nothing.
func (g *globals) keepLedgerOut(workspace string) error {
	if workspace == "" {
		return nil
	}
	err := host.CheckWorkspace(workspace, g.reachableFiles())
	var lw *host.LedgerInWorkspaceError
	if !errors.As(err, &lw) {
		if err != nil {
			return usagef("--workspace %s: %v", workspace, errors.Unwrap(err))
		}
		return nil
	}
	where := ""
	if lw.Resolved != lw.File {
		if abs, _ := filepath.Abs(lw.File); abs != lw.Resolved {
			where = " (it resolves to " + lw.Resolved + ")"
		}
	}
	if g.shared() {
		return usagef("the serve token file %s%s is inside the workspace %s, where scripts could read or overwrite it: give a narrower --workspace",
			lw.File, where, workspaceName(lw))
	}
	what := "the ledger " + lw.File
	if f := host.LedgerFiles(g.DBPath); len(f) > 0 && lw.File != f[0] {
		what = "the ledger's file " + lw.File
	}
	return usagef("%s%s is inside the workspace %s, where scripts could read or overwrite it: give --db a path outside the workspace (e.g. --db ../scripthost.db) or a narrower --workspace",
		what, where, workspaceName(lw))
}

// workspaceName is the workspace as given, with its real path when that differs.
func workspaceName(lw *host.LedgerInWorkspaceError) string {
	if abs, err := filepath.Abs(lw.Workspace); err == nil && abs == lw.ResolvedWorkspace {
		return lw.Workspace
	}
	return lw.Workspace + " (" + lw.ResolvedWorkspace + ")"
}

// errNoLedger: --db names a file that does not exist, and the command only reads or
// changes an existing ledger.
var errNoLedger = errors.New("no ledger")

// openStore opens the existing ledger named by --db. A missing file is refused rather
// than created: a mistyped --db must not look like an empty ledger. A postgres:// URL
// names a database several hosts share, which the first host creates the schema in.
func (g *globals) openStore(ctx context.Context) (ledger.Store, error) {
	if err := g.checkDefault(); err != nil {
		return nil, err
	}
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
	if err := g.checkDefault(); err != nil {
		return nil, err
	}
	if g.shared() {
		return openShared(ctx, g.DBPath, postgres.Options{MaxConns: g.DBConns, OnRetry: func(reason string) {
			if o := g.observer.Load(); o != nil {
				o.OnRetry(reason)
			}
		}})
	}
	if g.dbDefault {
		// The user's state directory may not exist yet; it holds nothing for others.
		if err := os.MkdirAll(filepath.Dir(g.DBPath), 0o700); err != nil {
			return nil, fmt.Errorf("the default ledger's directory: %w", err)
		}
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

// openShared opens the PostgreSQL ledger at url. A ledger of a newer schema is
// refused with this binary's release named beside the schema versions.
func openShared(ctx context.Context, url string, opts postgres.Options) (ledger.Store, error) {
	st, err := postgres.Open(ctx, url, opts)
	if errors.Is(err, ledger.ErrSchemaTooNew) {
		return nil, fmt.Errorf("%w (this is scripthost %s)", err, version())
	}
	return st, err
}

// urlScheme matches the scheme of a URL.
var urlScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// checkDB refuses a --db value that is a URL of another kind than postgres://, which
// would otherwise be taken for an SQLite file path, and a postgres:// URL that does not
// parse, before anything is opened or created.
func checkDB(db string) error {
	if postgres.IsURL(db) {
		if err := postgres.CheckURL(db); err != nil {
			return fmt.Errorf("--db %w", err)
		}
		return nil
	}
	if m := urlScheme.FindStringSubmatch(db); m != nil {
		return fmt.Errorf("--db %s: %s:// URLs are not supported: give a postgres:// URL for a PostgreSQL ledger, or a file path for an SQLite one",
			postgres.Redact(db), m[1])
	}
	return nil
}

// shared reports whether --db names a database several hosts share.
func (g *globals) shared() bool { return postgres.IsURL(g.DBPath) }

// dbEnv names the variable that gives --db its default.
const dbEnv = "SCRIPTHOST_DB"

// legacyDB is where earlier versions kept the ledger by default: in the working
// directory, which is also the default workspace of run and the one of plan run and
// agent run, so that scripts could read and overwrite it.
const legacyDB = "scripthost.db"

// defaultDB is $SCRIPTHOST_DB, else the ledger in the user's state directory. That
// directory is outside every workspace a project would use, and the same whatever the
// working directory, so that run, serve and the inspecting commands all find the one
// ledger. It is "" when there is no home directory to put it in.
func defaultDB() string {
	if v := os.Getenv(dbEnv); v != "" {
		return v
	}
	return stateLedger()
}

// stateLedger is $XDG_STATE_HOME/scripthost/scripthost.db, else
// ~/.local/state/scripthost/scripthost.db.
func stateLedger() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		// The XDG specification ignores a relative value.
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "scripthost", "scripthost.db")
}

// ledgerHelp says where the default ledger is, for --help.
func ledgerHelp() string {
	if p := stateLedger(); p != "" {
		return p
	}
	return "$XDG_STATE_HOME/scripthost/scripthost.db (here no home directory: give --db)"
}

// checkDefault refuses to open the default ledger when the working directory holds
// a ledger left where earlier versions kept it by default: carrying on with a fresh
// ledger would run again every handler the old one records as done.
func (g *globals) checkDefault() error {
	if g.DBPath == "" {
		return usagef("no home directory for the default ledger: give --db or $%s", dbEnv)
	}
	if !g.dbDefault {
		return nil
	}
	// Only an SQLite database counts: any other file of that name is not a ledger.
	f, err := os.Open(legacyDB)
	if err != nil {
		return nil
	}
	head := make([]byte, 16)
	_, err = io.ReadFull(f, head)
	f.Close()
	if err != nil || string(head) != "SQLite format 3\x00" {
		return nil
	}
	return usagef("found ./%s, the ledger's default place in earlier versions; the default ledger is now %s: to carry on with this one, move it there (with the -wal, -shm and .token files beside it), or out of the workspace and name it with --db",
		legacyDB, g.DBPath)
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

// Exit codes outside the error-class table (see docs/cli.md "Exit codes").
const (
	exitRefused = 7 // no such run/mutation/workflow, or a refused transition
	exitLedger  = 8 // the ledger file is locked, corrupt or newer than this binary
)

// exitCoder lets a command choose its exit code (the plan executor's codes).
type exitCoder interface{ ExitCode() int }

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "scripthost",
		Short: "Run sandboxed, durable handler workflows",
		Long: `Run sandboxed, durable handler workflows and approved plans, and inspect the ledger
that records every side effect.

The ledger is --db, else $` + dbEnv + `, else this user's default ledger:
  ` + ledgerHelp() + `
It must lie outside every workspace given to the tools: a command whose workspace
contains the ledger, or a file beside it, is refused.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.DBPath, "db", defaultDB(),
		"ledger: an SQLite file outside every workspace, or a postgres:// URL shared by several hosts ($"+dbEnv+", else $XDG_STATE_HOME/scripthost/scripthost.db, else ~/.local/state/scripthost/scripthost.db)")
	root.PersistentFlags().StringVar(&g.LogFormat, "log-format", "text", "log lines on stderr as text or json")
	root.PersistentFlags().IntVar(&g.DBConns, "db-conns", 0,
		"most connections this host opens to a PostgreSQL ledger (default 16); hosts that share a server can each take fewer (see docs/postgres.md)")
	root.PersistentFlags().BoolVar(&g.UnsafeCommands, "unsafe-commands", false, "run allowlisted commands without an OS sandbox when bubblewrap is not available (they can then read any file the host can)")
	root.Version = version()
	root.SetVersionTemplate("scripthost {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err, c} })
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if g.LogFormat != "text" && g.LogFormat != "json" {
			return usageError{fmt.Errorf("--log-format %q: want text or json", g.LogFormat), c}
		}
		g.dbDefault = !c.Flags().Changed("db") && os.Getenv(dbEnv) == ""
		if err := checkDB(g.DBPath); err != nil {
			return usageError{err, c}
		}
		if c.Flags().Changed("db-conns") {
			if g.DBConns < 1 {
				return usageError{fmt.Errorf("--db-conns %d: want 1 or more", g.DBConns), c}
			}
			if !g.shared() {
				return usageError{fmt.Errorf("--db-conns caps the connections to a PostgreSQL ledger; %s is an SQLite file", g.DBPath), c}
			}
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

// exitCode is the one table from errors to exit codes; see docs/cli.md "Exit codes".
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
	case errors.Is(err, ledger.ErrUnavailable):
		// The ledger's database could not be reached: a network error.
		return scripthost.ClassNetwork.Info().ExitCode
	case errors.As(err, &se):
		return scripthost.ExitCode(err)
	default:
		return scripthost.ExitGeneral
	}
}
