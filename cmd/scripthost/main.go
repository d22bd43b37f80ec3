// Command scripthost runs sandboxed, durable handler workflows and approved plans, and
// lets operators inspect runs and mutations and resolve the ones whose outcome is
// unknown. It is the only place that picks concrete drivers (SQLite, goja, wazero).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// globals are the flags and streams every subcommand shares.
type globals struct {
	DBPath string
	// UnsafeCommands lets run_command run without an OS sandbox when none is here.
	UnsafeCommands bool
	Stdin          io.Reader
	Stdout         io.Writer
	Stderr         io.Writer
}

// ledgerFiles are the ledger's files, which commands must not see even when the
// ledger is kept inside the workspace.
func (g *globals) ledgerFiles() []string {
	abs, err := filepath.Abs(g.DBPath)
	if err != nil {
		return nil
	}
	return []string{abs, abs + "-wal", abs + "-shm", abs + "-journal", abs + ".lock"}
}

// openStore opens the ledger named by --db.
func (g *globals) openStore(ctx context.Context) (ledger.Store, error) {
	return sqlite.Open(ctx, g.DBPath, sqlite.Options{})
}

// usageError marks a command-line mistake: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

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
	root.PersistentFlags().StringVar(&g.DBPath, "db", "./scripthost.db", "ledger database file (SQLite)")
	root.PersistentFlags().BoolVar(&g.UnsafeCommands, "unsafe-commands", false, "run allowlisted commands without an OS sandbox when bubblewrap is not available (they can then read any file the host can)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
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
				return usageError{fmt.Errorf("%s: %w", c.CommandPath(), err)}
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
	err := root.ExecuteContext(ctx)
	if err == nil {
		return scripthost.ExitOK
	}
	fmt.Fprintf(stderr, "scripthost: %v\n", err)
	return exitCode(err)
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
		errors.Is(err, ledger.ErrNoSpace), errors.Is(err, ledger.ErrReadOnly):
		return exitLedger
	case errors.Is(err, ledger.ErrNotFound), errors.Is(err, ledger.ErrIllegalTransition):
		return exitRefused
	case errors.As(err, &se):
		return scripthost.ExitCode(err)
	default:
		return scripthost.ExitGeneral
	}
}
