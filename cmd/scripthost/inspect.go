package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

func init() {
	commands = append(commands, newRunsCmd, newShowCmd, newMutationsCmd, newEventsCmd,
		newPauseCmd(true), newPauseCmd(false), newResolveCmd, newRetryCmd)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// withStore runs f on the ledger named by --db, closing it afterwards.
func withStore(ctx context.Context, g *globals, f func(ledger.Store) error) error {
	store, err := g.openStore(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	return f(store)
}

// list prints items as a JSON array (never null) or as a table.
func list[T any](g *globals, asJSON bool, items []T, header string, row func(T) []string) error {
	if asJSON {
		if items == nil {
			items = []T{}
		}
		return printJSON(g.Stdout, items)
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		rows = append(rows, row(it))
	}
	return table(g.Stdout, header, rows)
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func newRunsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var f ledger.RunFilter
	var status string
	var pf pageFlags
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List handler runs",
		Long: `List handler runs, oldest first. --limit N keeps the newest N; when there are more,
the cursor of the next, older page goes to stderr: pass it with --cursor. --search
(-q) keeps the runs whose id, workflow, handler, status, error or mutation tool
contains the text.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status == scripthost.StatusSuperseded {
				f.Superseded = true
			} else if status != "" {
				f.Status = scripthost.RunStatus(status)
				if !f.Status.Valid() {
					return usagef("--status %q: not a run status; want one of %s", status, strings.Join(runStatuses(), ", "))
				}
			}
			l, err := pf.list()
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				runs := []scripthost.Run{}
				if l.Paged() {
					pg, err := view.RunsPage(cmd.Context(), store, f, l)
					if err != nil {
						return err
					}
					runs = pg.Items
					defer printNext(g, pg.Next)
				} else if runs, err = view.Runs(cmd.Context(), store, f); err != nil {
					return err
				}
				return list(g, asJSON, runs, "ID\tWORKFLOW\tHANDLER\tPHASE\tSTATUS\tATTEMPT\tNEXT\tERROR", func(r scripthost.Run) []string {
					next := "-"
					if !r.NotBefore.IsZero() && !r.Status.Final() && r.SupersededBy == "" {
						next = r.NotBefore.Format(time.RFC3339)
					}
					return []string{r.ID, r.Workflow, r.Handler, string(r.Phase), r.Shown(), fmt.Sprint(r.Attempt), next, oneLine(r.Error, 80)}
				})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&f.Workflow, "workflow", "", "only this workflow")
	cmd.Flags().StringVar(&f.Handler, "handler", "", "only this handler")
	cmd.Flags().StringVar(&status, "status", "", "only this status (e.g. failed:logic), or superseded: the runs a retry took over")
	pf.add(cmd)
	return cmd
}

// runStatuses lists every run status, for messages.
func runStatuses() []string {
	var out []string
	for _, st := range []scripthost.RunStatus{scripthost.StatusActive, scripthost.StatusCommitted, scripthost.StatusSkipped,
		scripthost.StatusPausedTransient, scripthost.StatusPausedApproval, scripthost.StatusPausedReconciliation,
		scripthost.StatusFailedLogic, scripthost.StatusFailedInternal, scripthost.StatusCancelled} {
		out = append(out, string(st))
	}
	return append(out, scripthost.StatusSuperseded)
}

func newShowCmd(g *globals) *cobra.Command {
	var events, asJSON bool
	var version int
	cmd := &cobra.Command{
		Use:   "show RUN_ID|WORKFLOW",
		Short: "Show one run as JSON (its fields, its mutation, the snapshot of each phase and its lifecycle events), or a workflow's stored version and the files it was built from",
		Long: `Show one run as JSON. With --events, print only the run's lifecycle events, one a
line (phase_started, phase_completed, phase_failed, guard_skipped, retry_scheduled,
retry_started, paused, resumed, mutation_recorded, mutation_outcome, reconcile_attempt,
resolved, committed, tool_refused: a tool call the host refused, with its reason and
where the script made it); add --json for JSON lines.

Given a workflow's name instead, show its newest stored version (--version N for
another): path, hash, and the manifest, the files it was bundled from with their
SHA-256 and size; add --json for JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			store, err := g.openStore(ctx)
			if err != nil {
				return err
			}
			defer store.Close()
			if _, err := store.Run(ctx, args[0]); isNotFound(err) {
				if _, werr := store.Workflow(ctx, args[0]); werr == nil {
					if events {
						return usagef("--events goes with a run, and %q is a workflow", args[0])
					}
					return showWorkflow(ctx, g.Stdout, store, args[0], version, asJSON)
				}
			}
			if version != 0 {
				return usagef("--version goes with a workflow")
			}
			if events {
				run, err := store.Run(ctx, args[0])
				if err != nil {
					return err
				}
				lifecycle, err := store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: run.ID})
				if err != nil {
					return err
				}
				return printEvents(g.Stdout, run, lifecycle, asJSON)
			}
			if asJSON {
				return usagef("--json goes with --events or a workflow (show prints a run as JSON already)")
			}
			d, err := view.Detail(ctx, store, args[0])
			if err != nil {
				return err
			}
			return printJSON(g.Stdout, d)
		},
	}
	cmd.Flags().BoolVar(&events, "events", false, "print the run's lifecycle events")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --events: JSON lines; with a workflow: JSON")
	cmd.Flags().IntVar(&version, "version", 0, "with a workflow: this version (0: the newest)")
	return cmd
}

// mutationView and runDetail are the shared JSON shapes (see internal/view).
type (
	mutationView = view.Mutation
	runDetail    = view.RunDetail
)

func newMutationsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var f ledger.MutationFilter
	var status string
	var pf pageFlags
	cmd := &cobra.Command{
		Use:   "mutations",
		Short: "List recorded mutations (side effects)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" {
				f.Status = scripthost.MutationStatus(status)
				switch f.Status {
				case scripthost.MutationInFlight, scripthost.MutationApplied, scripthost.MutationFailed,
					scripthost.MutationNeedsReconcile, scripthost.MutationIndeterminate, scripthost.MutationSkipped:
				default:
					return usagef("--status %q: want in_flight, applied, failed, needs_reconcile, indeterminate or skipped", status)
				}
			}
			l, err := pf.list()
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				views := []mutationView{}
				if l.Paged() {
					pg, err := view.MutationsPage(cmd.Context(), store, f, l)
					if err != nil {
						return err
					}
					views = pg.Items
					defer printNext(g, pg.Next)
				} else if views, err = view.Mutations(cmd.Context(), store, f); err != nil {
					return err
				}
				return list(g, asJSON, views, "ID\tRUN\tTOOL\tSTATUS\tIDEMPOTENCY KEY\tERROR", func(m mutationView) []string {
					return []string{m.ID, m.RunID, m.Tool, string(m.Status), m.IdempotencyKey, oneLine(m.Error, 60)}
				})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&status, "status", "", "only this status (e.g. indeterminate)")
	cmd.Flags().StringVar(&f.RunID, "run", "", "only this run's mutation")
	cmd.Flags().StringVar(&f.Workflow, "workflow", "", "only this workflow")
	pf.add(cmd)
	return cmd
}

func newEventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	var f ledger.EventFilter
	var status string
	var pf pageFlags
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List events on topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" {
				f.Status = scripthost.EventStatus(status)
				switch f.Status {
				case scripthost.EventPending, scripthost.EventReserved, scripthost.EventConsumed, scripthost.EventSkipped:
				default:
					return usagef("--status %q: want pending, reserved, consumed or skipped", status)
				}
			}
			l, err := pf.list()
			if err != nil {
				return err
			}
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				evs := []scripthost.Event{}
				if l.Paged() {
					pg, err := view.EventsPage(cmd.Context(), store, f, l)
					if err != nil {
						return err
					}
					evs = pg.Items
					defer printNext(g, pg.Next)
				} else if evs, err = view.Events(cmd.Context(), store, f); err != nil {
					return err
				}
				return list(g, asJSON, evs, "SEQ\tWORKFLOW\tTOPIC\tID\tSTATUS\tRESERVED BY\tPAYLOAD", func(e scripthost.Event) []string {
					return []string{fmt.Sprint(e.Seq), e.Workflow, e.Topic, e.MessageID, string(e.Status), e.ReservedBy, oneLine(string(e.Payload), 60)}
				})
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().StringVar(&f.Workflow, "workflow", "", "only this workflow")
	cmd.Flags().StringVar(&f.Topic, "topic", "", "only this topic")
	cmd.Flags().StringVar(&status, "status", "", "only this status")
	pf.add(cmd)
	cmd.AddCommand(newEventsSkipCmd(g), topicsCmd(g))
	return cmd
}

func newPauseCmd(pause bool) func(*globals) *cobra.Command {
	return func(g *globals) *cobra.Command {
		use, short := "pause WORKFLOW", "Stop starting new runs of a workflow"
		if !pause {
			use, short = "resume WORKFLOW", "Start running a paused workflow again"
		}
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				store, err := g.openStore(cmd.Context())
				if err != nil {
					return err
				}
				defer store.Close()
				if err := store.SetWorkflowPaused(cmd.Context(), args[0], pause); err != nil {
					return err
				}
				state := "paused"
				if !pause {
					state = "resumed"
				}
				fmt.Fprintf(g.Stdout, "workflow %s %s\n", args[0], state)
				return nil
			},
		}
	}
}

func newResolveCmd(g *globals) *cobra.Command {
	var as, result, by, reason string
	var force bool
	var b bulkFlags
	cmd := &cobra.Command{
		Use:   "resolve MUTATION_ID --as applied|failed|skipped",
		Short: "Record a person's answer for a mutation whose outcome is unknown",
		Long: `Resolve an indeterminate mutation (or, with --force, one still being reconciled):
  applied  the side effect happened: the run continues to next with --result
  failed   it did not happen: the events are released and a fresh run prepares again
  skipped  leave it: the events are marked skipped and next runs with {status: 'skipped'}

With a filter (--workflow, --handler, --search) instead of a mutation id, it lists
every indeterminate mutation the filter selects and resolves nothing; add --yes (and
--reason, required) to resolve exactly those, each recorded in the audit trail.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if b.set(cmd) {
				if len(args) > 0 {
					return usagef("give a mutation id or a filter, not both")
				}
				if force {
					return usagef("--force goes with one mutation id")
				}
				r := view.BulkRequest{By: approver(by), Reason: reason, As: scripthost.MutationStatus(as)}
				if result != "" {
					if !json.Valid([]byte(result)) {
						return usagef("--result is not valid JSON: %s", result)
					}
					r.Result = json.RawMessage(result)
				}
				return withStore(cmd.Context(), g, func(store ledger.Store) error {
					return runBulk(cmd.Context(), g, store, view.BulkResolve, b, r)
				})
			}
			if len(args) == 0 {
				return usagef("give a mutation id, or a filter (--workflow, --handler, --search)")
			}
			r := ledger.Resolution{As: scripthost.MutationStatus(as), Force: force, By: by}
			switch r.As {
			case scripthost.MutationApplied, scripthost.MutationFailed, scripthost.MutationSkipped:
			default:
				return usagef("--as %q: want applied, failed or skipped", as)
			}
			if result != "" {
				if r.As != scripthost.MutationApplied {
					return usagef("--result goes with --as applied")
				}
				if !json.Valid([]byte(result)) {
					return usagef("--result is not valid JSON: %s", result)
				}
				r.Result = json.RawMessage(result)
			}
			r.By = approver(r.By)
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				req := map[string]any{"as": r.As, "result": r.Result, "force": r.Force}
				if reason != "" {
					req["reason"] = reason
				}
				res, err := recordCLI(cmd.Context(), store, "resolve", args[0], r.By, req, func(ctx context.Context) (any, error) {
					return hostfuncs.Resolve(ctx, store, args[0], r)
				})
				if err != nil {
					return err
				}
				m := res.(scripthost.Mutation)
				fmt.Fprintf(g.Stdout, "mutation %s resolved as %s by %s\n", m.ID, m.Status, m.ResolvedBy)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "applied, failed or skipped")
	cmd.Flags().StringVar(&result, "result", "", "the mutation's result as JSON (with --as applied)")
	cmd.Flags().StringVar(&by, "by", "", "who resolves (default: the current user)")
	cmd.Flags().BoolVar(&force, "force", false, "also resolve a mutation that is still being reconciled")
	cmd.Flags().StringVar(&reason, "reason", "", "what was checked, for the audit trail (required with a filter)")
	b.add(cmd, "indeterminate mutation")
	_ = cmd.MarkFlagRequired("as")
	return cmd
}

func newRetryCmd(g *globals) *cobra.Command {
	var version int
	var by, reason, status string
	var b bulkFlags
	var now retryNow
	cmd := &cobra.Command{
		Use:   "retry RUN_ID [--version N] [--now] [--reason TEXT]",
		Short: "Create a retry of a failed or paused run, on the workflow's newest version",
		Long: `Create the run that retries a failed or paused run. It runs the newest stored version
of the workflow, so a fix stored since (by scripthost run) is what runs; --version pins
another. A run whose mutation was applied resumes at next (emitting); any other starts
again at prepare. The run retried is then shown as superseded.

Without --now the retry is only queued: nothing runs it until the next pass of
scripthost run or scripthost serve over the workflow picks it up. With --now this
command drives it at once, to its commit or its next pause (--tools, --workspace and
--timeout as for run); the exit code is then 0 when it committed and 9 when it failed
or paused again.

With a filter (--workflow, --handler, --status, --search) instead of a run id, it
lists every failed or paused run the filter selects that no retry took over, and
retries nothing; add --yes to queue a retry of exactly those, each recorded in the
audit trail.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if b.set(cmd) {
				if len(args) > 0 {
					return usagef("give a run id or a filter, not both")
				}
				if version != 0 || now.now || now.set(cmd) {
					return usagef("--version, --now, --tools, --workspace and --timeout go with one run id")
				}
				b.f.Status = status
				return withStore(cmd.Context(), g, func(store ledger.Store) error {
					return runBulk(cmd.Context(), g, store, view.BulkRetry, b, view.BulkRequest{By: approver(by), Reason: reason})
				})
			}
			if len(args) == 0 {
				return usagef("give a run id, or a filter (--workflow, --handler, --status, --search)")
			}
			if version < 0 {
				return usagef("--version %d: want a stored version number (0: the newest)", version)
			}
			if now.now {
				return retryAndDrive(cmd.Context(), g, args[0], version, now, by, reason)
			}
			if now.set(cmd) {
				return usagef("--tools, --workspace and --timeout go with --now")
			}
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				ctx := cmd.Context()
				src, r, err := recordRetry(ctx, store, args[0], version, by, reason)
				if err != nil {
					return err
				}
				fmt.Fprintf(g.Stdout, "run %s retries %s from %s on version %d\n", r.ID, src.ID, r.Phase, r.Version)
				fmt.Fprintf(g.Stdout, "queued: it runs at the next pass of scripthost run or scripthost serve over %s (or now: scripthost retry --now)\n", r.Workflow)
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&version, "version", 0, "the workflow version to run (default: the newest stored)")
	cmd.Flags().StringVar(&by, "by", "", "who retries, for the audit trail (default: the current user)")
	cmd.Flags().BoolVar(&now.now, "now", false, "drive the retry at once, to its commit or its next pause")
	cmd.Flags().StringVar(&now.tools, "tools", "", "with --now: HTTP tools declared in a JSON or YAML file")
	cmd.Flags().StringVar(&now.workspace, "workspace", "", "with --now: directory the Files.* tools are confined to (default: the workflow's directory)")
	cmd.Flags().DurationVar(&now.timeout, "timeout", 0, "with --now: wall-clock limit of one handler invocation (default 5s)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is retried, for the audit trail")
	cmd.Flags().StringVar(&status, "status", "", "with a filter: every run in this status")
	b.add(cmd, "failed or paused run")
	return cmd
}

// recordRetry creates the retry of run id (view.Retry) as an operator action recorded in
// the audit trail with the operator's reason, as serve's POST /api/v1/runs/{id}/retry is.
func recordRetry(ctx context.Context, store ledger.Store, id string, version int, by, reason string) (src, retry scripthost.Run, err error) {
	req := map[string]any{"version": version}
	if reason != "" {
		req["reason"] = reason
	}
	_, err = recordCLI(ctx, store, "retry", id, by, req, func(ctx context.Context) (any, error) {
		var rerr error
		src, retry, rerr = view.Retry(ctx, store, id, version)
		if rerr != nil {
			return nil, rerr
		}
		return map[string]scripthost.Run{"source": src, "retry": retry}, nil
	})
	return src, retry, err
}
