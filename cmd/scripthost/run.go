package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
)

func init() { commands = append(commands, newRunCmd, newValidateCmd) }

type runFlags struct {
	once      bool
	wait      time.Duration
	workspace string
	tools     string
	name      string
	replace   bool
	poll      time.Duration
	timeout   time.Duration
	verbose   bool
	jsonl     bool
	allow     []string
	reconcile hostfuncs.ReconcilePolicy
	// concurrency bounds the runs driven at once (0: runtime.DefaultConcurrency).
	concurrency int
	lease       runtime.LeaseOptions
	// grace is how long the phases under way may take to finish after a signal.
	grace time.Duration
}

func newRunCmd(g *globals) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run WORKFLOW [WORKFLOW...]",
		Short: "Load workflows (.js, .ts, .wasm) and run them",
		Long: `Load each workflow file, store it as the workflow's newest version, recover what a
previous process left unfinished, and run producers and consumers. Without --once, run
until SIGINT (Ctrl-C) or SIGTERM. A signal (with or without --once) stops it starting
new work; the phases under way finish for up to --grace, and it exits 0. A phase cut
short by the end of the grace period is picked up by the next start.

With --once, run until no work is left, print a summary and exit: 0 when every
handler's newest run committed, 9 when a run failed or paused and waits for a person
(the summary says how to unblock each handler), 10 when runs wait for an automatic
retry, reconcile attempt or wake-up. --wait D keeps going while such work is due
within D.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorkflows(cmd.Context(), g, f, args)
		},
	}
	cmd.Flags().DurationVar(&f.grace, "grace", 30*time.Second, "on SIGINT or SIGTERM, how long running phases may take to finish")
	cmd.Flags().BoolVar(&f.once, "once", false, "run until no work is left, then exit (see the exit codes above)")
	cmd.Flags().DurationVar(&f.wait, "wait", 0, "with --once: keep going while a retry, reconcile attempt or wake-up is due within this time")
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "directory the Files.* tools are confined to (default: the workflow's directory)")
	cmd.Flags().StringVar(&f.tools, "tools", "", "HTTP tools declared in a JSON or YAML file")
	cmd.Flags().StringVar(&f.name, "name", "", "workflow name (default: name: in the definition, else derived from the file's absolute path; one workflow only)")
	cmd.Flags().BoolVar(&f.replace, "replace", false, "move a workflow name that belongs to another file to this one")
	cmd.Flags().DurationVar(&f.poll, "poll", 250*time.Millisecond, "how often to look for work when idle")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "wall-clock limit of one handler invocation (default 5s)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "log every tool call and mutation to stderr")
	cmd.Flags().BoolVar(&f.jsonl, "jsonl", false, "write the runs' lifecycle events to stdout as JSON lines (console output goes to stderr)")
	cmd.Flags().StringSliceVar(&f.allow, "allow", nil, "programs plan.run_command may run (repeatable; none by default)")
	cmd.Flags().IntVar(&f.reconcile.MaxAttempts, "reconcile-attempts", 5, "reconcile attempts for an uncertain mutation before a person must resolve it")
	cmd.Flags().DurationVar(&f.reconcile.BaseDelay, "reconcile-delay", time.Second, "wait after the first undecided reconcile attempt (doubles each time)")
	cmd.Flags().DurationVar(&f.reconcile.MaxDelay, "reconcile-max-delay", 5*time.Minute, "longest wait between reconcile attempts")
	cmd.Flags().IntVar(&f.concurrency, "concurrency", 0, "most runs driven at once, across every workflow (0: 4 per CPU, at least 16)")
	cmd.Flags().StringVar(&f.lease.Owner, "host-id", "", "this host's name in the leases of a shared (postgres://) ledger (default hostname/pid/random)")
	cmd.Flags().DurationVar(&f.lease.TTL, "lease-ttl", 15*time.Second, "shared ledger: how long a dead host's workflows wait before another host takes them over")
	addRecordCallsFlag(cmd, g)
	return cmd
}

// buildHost opens the ledger and wires a host with the workspace and HTTP tools.
func buildHost(ctx context.Context, g *globals, workspace, toolsFile string, timeout time.Duration, verbose bool, allow []string,
	reconcile hostfuncs.ReconcilePolicy, concurrency int, lease runtime.LeaseOptions, console io.Writer) (*host.Host, ledger.Store, error) {
	if concurrency < 0 {
		return nil, nil, usagef("--concurrency must be 0 (the default) or more, got %d", concurrency)
	}
	if reconcile.MaxAttempts < 1 || reconcile.BaseDelay <= 0 || reconcile.MaxDelay < reconcile.BaseDelay {
		return nil, nil, usagef("--reconcile-attempts must be at least 1 and 0 < --reconcile-delay <= --reconcile-max-delay")
	}
	var consoleMu sync.Mutex // see OnConsole
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
		// Before the ledger is opened, so that a refused start leaves it as it was.
		if err := g.keepLedgerOut(workspace); err != nil {
			return nil, nil, err
		}
	}
	store, err := g.createStore(ctx, true)
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	redactor := hostfuncs.NewRedactor()
	logger := g.logger(level)
	obs := g.observer.Load()
	var observer runtime.Observer
	if obs != nil {
		observer = obs
	}
	h, err := host.New(ctx, store, host.Options{
		Workspace:   workspace,
		LedgerFiles: g.reachableFiles(),
		Commands:    programs(allow),
		Reconcile:   reconcile,
		Limits:      sandbox.Limits{Timeout: timeout},
		Concurrency: concurrency,
		Logger:      logger,
		Redactor:    redactor,
		Failpoint:   failpoint,
		Lease:       lease,
		Observer:    observer,
		RecordCalls: g.recordCalls,
		// keepLedgerOut and host.New keep the ledger out of the workspace, and so out
		// of the command sandbox.
		CommandOptions: command.Config{Unsafe: g.UnsafeCommands},
		OnConsole: func(run scripthost.Run, lines []sandbox.ConsoleLine) {
			// Runs of several workflows print at once: one batch at a time, whole, and
			// the writer used by one goroutine at a time.
			consoleMu.Lock()
			defer consoleMu.Unlock()
			for _, l := range lines {
				fmt.Fprintf(console, "[%s/%s] %s\n", run.Workflow, run.Handler, redactor.Redact(l.Text))
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
			return nil, nil, usageError{err: err}
		}
		if err := checkCallsFitLease(store, lease.TTL, tools); err != nil {
			store.Close()
			return nil, nil, usageError{err: err}
		}
		for _, t := range tools {
			redactor.AddSecret(t.Secrets...)
		}
		if err := h.RegisterTool(tools...); err != nil {
			store.Close()
			return nil, nil, usageError{err: err}
		}
	}
	wrapToolFailpoints(h.Tools())
	if obs != nil {
		obs.WrapTools(h.Tools())
	}
	return h, store, nil
}

// untilSignal runs loop (the host's RunUntil or RunOnceUntil) until it returns or the
// command's context is done (SIGINT, SIGTERM); then it drains it as serve does
// (hostLoop): no new work, the phases under way finish within the grace period.
// stopped reports that a signal ended it; the command then exits 0.
func untilSignal(ctx context.Context, g *globals, grace time.Duration,
	run func(ctx context.Context, stop <-chan struct{}) error) (stopped bool, err error) {
	loop := newHostLoop(ctx)
	defer loop.cancel()
	loop.start(run)
	select {
	case err := <-loop.ran:
		return false, err
	case <-ctx.Done():
	}
	logger := g.logger(slog.LevelInfo)
	if err := loop.drain(logger, grace); err != nil {
		return true, err
	}
	if err := outdatedCause(ctx); err != nil {
		return true, err
	}
	logger.Info("stopped")
	return true, nil
}

// stoppedWhileStarting returns err, the result of a host command (run, serve), or nil
// when it failed while starting (before its loop started) because a signal
// (SIGINT, SIGTERM) cancelled signalled: nothing ran, and what the start left undone
// the next start does, so a host stopped then ends as one stopped while running.
func stoppedWhileStarting(signalled context.Context, g *globals, started bool, err error) error {
	if err == nil || started || signalled.Err() == nil {
		return err
	}
	g.logger(slog.LevelInfo).Info("stopped while starting", "err", err)
	return nil
}

func runWorkflows(ctx context.Context, g *globals, f runFlags, paths []string) (err error) {
	started := false
	defer func(signalled context.Context) { err = stoppedWhileStarting(signalled, g, started, err) }(ctx)
	if f.name != "" && len(paths) > 1 {
		return usagef("--name names one workflow, got %d files", len(paths))
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return usagef("workflow %s: %v", p, errors.Unwrap(err))
		}
		if _, err := langOf(p); err != nil {
			return usageError{err: err}
		}
	}
	ws := f.workspace
	if ws == "" {
		ws = filepath.Dir(paths[0])
	}
	if f.lease.TTL <= 0 {
		return usagef("--lease-ttl must be positive")
	}
	if f.grace < 0 {
		return usagef("--grace must be 0 or more")
	}
	console := g.Stdout
	if f.jsonl {
		console = g.Stderr
	}
	runObserver(g, f.verbose)
	h, store, err := buildHost(ctx, g, ws, f.tools, f.timeout, f.verbose, f.allow, f.reconcile, f.concurrency, f.lease, console)
	if err != nil {
		return err
	}
	defer store.Close()
	defer h.Close(context.WithoutCancel(ctx))
	ctx, stopWatch := stopWhenOutdated(ctx, g, store)
	defer stopWatch()
	flush, err := followLifecycle(ctx, g, store, f.poll)
	if err != nil {
		return err
	}
	defer flush()
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
		v, err := h.Load(ctx, p, host.LoadOptions{Name: f.name, Replace: f.replace})
		if err != nil {
			return err
		}
		fmt.Fprintf(g.Stderr, "workflow %s version %d (%s)\n", v.Workflow, v.Version, p)
	}
	if f.jsonl {
		stream, err := startEventStream(ctx, store, g.Stdout, f.poll)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := stream.close(ctx); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	if !f.once {
		if f.wait != 0 {
			return usagef("--wait goes with --once")
		}
		out, err := h.Outstanding(ctx)
		if err != nil {
			return err
		}
		reportOutstanding(g, out)
		started = true
		_, err = untilSignal(ctx, g, f.grace, func(ctx context.Context, stop <-chan struct{}) error {
			return h.RunUntil(ctx, stop, f.poll)
		})
		return err
	}
	if f.wait < 0 {
		return usagef("--wait %v: want a positive duration", f.wait)
	}
	since := time.Now()
	started = true
	for {
		stopped, err := untilSignal(ctx, g, f.grace, h.RunOnceUntil)
		if stopped || err != nil {
			return err
		}
		out, err := h.Outstanding(ctx)
		if err != nil {
			return err
		}
		now := time.Now()
		if f.wait > 0 && !out.NextDue.IsZero() && !out.NextDue.After(now.Add(f.wait)) {
			// At least one poll interval, so that a run that cannot move yet is not
			// driven in a busy loop.
			t := time.NewTimer(max(out.NextDue.Sub(now), f.poll))
			select {
			case <-ctx.Done():
				// A signal while nothing runs: nothing to drain.
				t.Stop()
				if err := outdatedCause(ctx); err != nil {
					return err
				}
				g.logger(slog.LevelInfo).Info("stopped")
				return nil
			case <-t.C:
			}
			continue
		}
		if err := summarize(ctx, g, store, h.Workflows(), since); err != nil {
			return err
		}
		reportOutstanding(g, out)
		return onceResult(out)
	}
}

// Exit codes of run --once (see docs/cli.md "Exit codes").
const (
	exitBlocked    = 9  // a run failed or paused and waits for a person
	exitUnfinished = 10 // runs wait for an automatic retry, reconcile or wake-up
)

// onceError ends run --once with a documented exit code.
type onceError struct {
	code int
	msg  string
}

func (e onceError) Error() string { return e.msg }
func (e onceError) ExitCode() int { return e.code }

func onceResult(out runtime.Outstanding) error {
	switch {
	case len(out.Blocked) > 0:
		return onceError{exitBlocked, fmt.Sprintf("%d handler(s) blocked until a person acts (see above)", len(out.Blocked))}
	case len(out.Waiting) > 0:
		return onceError{exitUnfinished, fmt.Sprintf("%d run(s) wait for an automatic retry (run again later, or use --wait)", len(out.Waiting))}
	}
	return nil
}

// reportOutstanding says, for each blocked handler, how to unblock it, and when each
// waiting run is picked up again.
func reportOutstanding(g *globals, out runtime.Outstanding) {
	for _, s := range out.Blocked {
		r := s.Run
		fmt.Fprintf(g.Stderr, "blocked: %s/%s: run %s is %s: %s\n", r.Workflow, r.Handler, r.ID, r.Status, oneLine(r.Error, 200))
		fmt.Fprintf(g.Stderr, "  to unblock: %s\n", unblockHint(s))
		if r.Kind == scripthost.KindConsumer && s.Mutation == nil && r.Status.Failed() {
			fmt.Fprintf(g.Stderr, "  or, when one event is the cause, set it aside: scripthost events skip %s TOPIC ID (scripthost show %s lists the run's events)\n",
				r.Workflow, r.ID)
		}
	}
	for _, s := range out.Waiting {
		r := s.Run
		what := "retried"
		if s.Mutation != nil {
			what = "reconciled (mutation " + s.Mutation.ID + ")"
		}
		fmt.Fprintf(g.Stderr, "waiting: %s/%s: run %s (%s) is %s automatically at %s\n",
			r.Workflow, r.Handler, r.ID, r.Status, what, s.Due.Format(time.RFC3339))
	}
}

func unblockHint(s runtime.Stuck) string {
	r := s.Run
	switch {
	case s.Mutation != nil:
		return fmt.Sprintf("find out whether the side effect happened, then scripthost resolve %s --as applied|failed|skipped", s.Mutation.ID)
	case r.Status == scripthost.StatusPausedApproval:
		return fmt.Sprintf("fix the credentials or permissions the tool refused, then scripthost retry %s", r.ID)
	case r.Status == scripthost.StatusPausedTransient:
		return fmt.Sprintf("automatic retries are used up: once the service answers, scripthost retry %s", r.ID)
	case r.Status == scripthost.StatusPausedReconciliation:
		return fmt.Sprintf("scripthost retry %s", r.ID)
	}
	return fmt.Sprintf("fix the workflow and store the fix (scripthost run FILE), then scripthost retry %s (it runs the newest version)", r.ID)
}

// summarize prints what --once did: run counts by status per workflow, and the
// warnings recorded on runs since it started.
func summarize(ctx context.Context, g *globals, store ledger.Store, workflows []string, since time.Time) error {
	for _, wf := range workflows {
		runs, err := store.Runs(ctx, ledger.RunFilter{Workflow: wf})
		if err != nil {
			return err
		}
		counts := map[scripthost.RunStatus]int{}
		for _, r := range runs {
			counts[r.Status]++
		}
		var parts []string
		for _, s := range []scripthost.RunStatus{scripthost.StatusCommitted, scripthost.StatusSkipped, scripthost.StatusActive,
			scripthost.StatusPausedTransient, scripthost.StatusPausedApproval, scripthost.StatusPausedReconciliation,
			scripthost.StatusFailedLogic, scripthost.StatusFailedInternal, scripthost.StatusCancelled} {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
			}
		}
		fmt.Fprintf(g.Stderr, "workflow %s: %d runs (%s)\n", wf, len(runs), strings.Join(parts, ", "))
		warnings, err := runtime.Warnings(ctx, store, wf, "")
		if err != nil {
			return err
		}
		for _, w := range warnings {
			if !w.At.Before(since) {
				fmt.Fprintf(g.Stderr, "warning: %s/%s: run %s: %s\n", wf, w.Handler, w.RunID, w.Message)
			}
		}
	}
	return nil
}

func newValidateCmd(g *globals) *cobra.Command {
	var toolsFile string
	var noTypes bool
	cmd := &cobra.Command{
		Use:   "validate WORKFLOW [--tools FILE]",
		Short: "Check a workflow file without running it or touching the ledger",
		Long: `Load a workflow in its engine and check its definition, without running it or touching
the ledger. A TypeScript workflow is also type-checked with tsc, when tsc is on PATH,
against the sandbox's declarations and the tools' (Files, plan and the HTTP tools of
--tools); without tsc the type check is skipped and validate says so. When the
workflow's directory or an ancestor (up to a repository root) has a tsconfig.json, the
check covers that project as tsc -p does, with its options, imports, declaration files
and node_modules types, and the sandbox's declarations added; the project is not
written to. Without one the workflow is checked alone.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			lang, err := langOf(args[0])
			if err != nil {
				return usageError{err: err}
			}
			v, err := validateOnly(cmd.Context(), args[0], src)
			if err != nil {
				return err
			}
			if lang == "ts" && !noTypes {
				switch err := typeCheck(cmd.Context(), args[0], src, toolsFile); {
				case errors.Is(err, errNoCompiler):
					fmt.Fprintf(g.Stderr, "%s: type check skipped: %v\n", args[0], err)
				case err != nil:
					return err
				default:
					v += "; types ok"
				}
			}
			fmt.Fprintln(g.Stdout, v)
			return nil
		},
	}
	cmd.Flags().StringVar(&toolsFile, "tools", "", "HTTP tools declared in a JSON or YAML file (for the type check)")
	cmd.Flags().BoolVar(&noTypes, "no-typecheck", false, "do not type-check a TypeScript workflow")
	return cmd
}

func programs(names []string) []command.Program {
	var out []command.Program
	for _, n := range names {
		out = append(out, command.Program{Name: n})
	}
	return out
}
