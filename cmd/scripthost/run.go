package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

func init() { commands = append(commands, newRunCmd, newValidateCmd) }

type runFlags struct {
	once      bool
	workspace string
	tools     string
	name      string
	poll      time.Duration
	timeout   time.Duration
	verbose   bool
	allow     []string
	reconcile hostfuncs.ReconcilePolicy
}

func newRunCmd(g *globals) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run WORKFLOW [WORKFLOW...]",
		Short: "Load workflows (.js, .ts, .wasm) and run them",
		Long: `Load each workflow file, store it as the workflow's newest version, recover what a
previous process left unfinished, and run producers and consumers. With --once, run
until no work is left and exit 0; otherwise run until interrupted.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorkflows(cmd.Context(), g, f, args)
		},
	}
	cmd.Flags().BoolVar(&f.once, "once", false, "run until no work is left, then exit")
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "directory the Files.* tools are confined to (default: the workflow's directory)")
	cmd.Flags().StringVar(&f.tools, "tools", "", "HTTP tools declared in a JSON or YAML file")
	cmd.Flags().StringVar(&f.name, "name", "", "workflow name (default: derived from the file name; one workflow only)")
	cmd.Flags().DurationVar(&f.poll, "poll", 250*time.Millisecond, "how often to look for work when idle")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "wall-clock limit of one handler invocation (default 5s)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "log every tool call and mutation to stderr")
	cmd.Flags().StringSliceVar(&f.allow, "allow", nil, "programs plan.run_command may run (repeatable; none by default)")
	cmd.Flags().IntVar(&f.reconcile.MaxAttempts, "reconcile-attempts", 5, "reconcile attempts for an uncertain mutation before a person must resolve it")
	cmd.Flags().DurationVar(&f.reconcile.BaseDelay, "reconcile-delay", time.Second, "wait after the first undecided reconcile attempt (doubles each time)")
	cmd.Flags().DurationVar(&f.reconcile.MaxDelay, "reconcile-max-delay", 5*time.Minute, "longest wait between reconcile attempts")
	return cmd
}

// buildHost opens the ledger and wires a host with the workspace and HTTP tools.
func buildHost(ctx context.Context, g *globals, workspace, toolsFile string, timeout time.Duration, verbose bool, allow []string, reconcile hostfuncs.ReconcilePolicy) (*host.Host, ledger.Store, error) {
	if reconcile.MaxAttempts < 1 || reconcile.BaseDelay <= 0 || reconcile.MaxDelay < reconcile.BaseDelay {
		return nil, nil, usagef("--reconcile-attempts must be at least 1 and 0 < --reconcile-delay <= --reconcile-max-delay")
	}
	for _, p := range []string{toolsFile} {
		if p != "" {
			if _, err := os.Stat(p); err != nil {
				return nil, nil, usagef("%v", err)
			}
		}
	}
	if workspace != "" {
		if fi, err := os.Stat(workspace); err != nil || !fi.IsDir() {
			return nil, nil, usagef("--workspace %s: not a directory", workspace)
		}
	}
	store, err := g.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	redactor := hostfuncs.NewRedactor()
	logger := slog.New(slog.NewTextHandler(g.Stderr, &slog.HandlerOptions{Level: level}))
	h, err := host.New(ctx, store, host.Options{
		Workspace: workspace,
		Commands:  programs(allow),
		// The ledger's own files stay out of the command sandbox.
		CommandOptions: command.Config{Unsafe: g.UnsafeCommands, Hide: g.ledgerFiles()},
		Reconcile:      reconcile,
		Limits:         sandbox.Limits{Timeout: timeout},
		Logger:         logger,
		Redactor:       redactor,
		Failpoint:      failpoint,
		OnConsole: func(run scripthost.Run, lines []sandbox.ConsoleLine) {
			for _, l := range lines {
				fmt.Fprintf(g.Stdout, "[%s/%s] %s\n", run.Workflow, run.Handler, redactor.Redact(l.Text))
			}
		},
	})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	if toolsFile != "" {
		tools, err := httptool.Load(toolsFile, os.LookupEnv)
		if err != nil {
			store.Close()
			return nil, nil, usageError{err}
		}
		for _, t := range tools {
			redactor.AddSecret(t.Secrets...)
		}
		if err := h.RegisterTool(tools...); err != nil {
			store.Close()
			return nil, nil, usageError{err}
		}
	}
	wrapToolFailpoints(h.Tools())
	return h, store, nil
}

func runWorkflows(ctx context.Context, g *globals, f runFlags, paths []string) error {
	if f.name != "" && len(paths) > 1 {
		return usagef("--name names one workflow, got %d files", len(paths))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return usagef("workflow %s: %v", p, errors.Unwrap(err))
		}
		if _, err := langOf(p); err != nil {
			return usageError{err}
		}
	}
	ws := f.workspace
	if ws == "" {
		ws = filepath.Dir(paths[0])
	}
	unlock, err := lockLedger(g.DBPath)
	if err != nil {
		return err
	}
	defer unlock()
	h, store, err := buildHost(ctx, g, ws, f.tools, f.timeout, f.verbose, f.allow, f.reconcile)
	if err != nil {
		return err
	}
	defer store.Close()
	defer h.Close(context.WithoutCancel(ctx))
	// Validate every file before storing any, so a bad one writes nothing.
	for _, p := range paths {
		src, err := os.ReadFile(p)
		if err != nil {
			return usagef("%v", err)
		}
		if _, err := h.Runtime().Validate(ctx, p, src); err != nil {
			return err
		}
	}
	for _, p := range paths {
		var v ledger.WorkflowVersion
		if f.name != "" {
			v, err = h.LoadWorkflowAs(ctx, f.name, p)
		} else {
			v, err = h.LoadWorkflow(ctx, p)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(g.Stderr, "workflow %s version %d (%s)\n", v.Workflow, v.Version, p)
	}
	if f.once {
		if err := h.RunOnce(ctx); err != nil {
			return err
		}
		return summarize(ctx, g, store, h.Workflows())
	}
	return h.Run(ctx, f.poll)
}

// summarize prints what --once left behind: counts by status, and the runs that need
// a person.
func summarize(ctx context.Context, g *globals, store ledger.Store, workflows []string) error {
	for _, wf := range workflows {
		runs, err := store.Runs(ctx, ledger.RunFilter{Workflow: wf})
		if err != nil {
			return err
		}
		counts := map[scripthost.RunStatus]int{}
		var attention []scripthost.Run
		for _, r := range runs {
			counts[r.Status]++
			if r.Status != scripthost.StatusCommitted && r.Status != scripthost.StatusSkipped {
				attention = append(attention, r)
			}
		}
		var parts []string
		for _, s := range []scripthost.RunStatus{scripthost.StatusCommitted, scripthost.StatusSkipped, scripthost.StatusActive,
			scripthost.StatusPausedTransient, scripthost.StatusPausedApproval, scripthost.StatusPausedReconciliation,
			scripthost.StatusFailedLogic, scripthost.StatusFailedInternal} {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
			}
		}
		fmt.Fprintf(g.Stderr, "workflow %s: %d runs (%s)\n", wf, len(runs), strings.Join(parts, ", "))
		superseded := map[string]bool{}
		for _, r := range runs {
			if r.RetryOf != "" {
				superseded[r.RetryOf] = true
			}
		}
		for _, r := range attention {
			if superseded[r.ID] {
				continue
			}
			fmt.Fprintf(g.Stderr, "  run %s %s: %s %s: %s\n", r.ID, r.Handler, r.Phase, r.Status, r.Error)
		}
	}
	return nil
}

func newValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate WORKFLOW",
		Short: "Check a workflow file without running it or touching the ledger",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			if _, err := langOf(args[0]); err != nil {
				return usageError{err}
			}
			v, err := validateOnly(cmd.Context(), args[0], src)
			if err != nil {
				return err
			}
			fmt.Fprintln(g.Stdout, v)
			return nil
		},
	}
}

func programs(names []string) []command.Program {
	var out []command.Program
	for _, n := range names {
		out = append(out, command.Program{Name: n})
	}
	return out
}

// lockLedger takes an exclusive lock beside the database so that one host process at
// a time drives a SQLite ledger; the kernel releases it if the process dies.
func lockLedger(db string) (func(), error) {
	f, err := os.OpenFile(db+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", db, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another scripthost process: %w", db, ledger.ErrLocked)
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
