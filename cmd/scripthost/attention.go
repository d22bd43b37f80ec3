package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

func init() {
	commands = append(commands, newAttentionCmd, newHostsCmd, newOverviewCmd)
}

func newAttentionCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "attention",
		Short: "List what waits for a person, and what to do about each",
		Long: `List what waits for a person across every workflow in the ledger: handlers
blocked until someone acts (with the command that unblocks each: resolve the
mutation, retry the run, or skip the event that poisons it), indeterminate mutations
with their params and age, failed runs no retry took over, agent tool calls waiting
for approval, and hosts that stopped renewing their leases (PostgreSQL ledgers).

--json prints the report GET /api/v1/attention answers, field for field.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				a, err := view.NeedsAttention(cmd.Context(), store, view.AttentionOptions{Clock: time.Now})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(g.Stdout, a)
				}
				printAttention(g.Stdout, a)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// printAttention prints the report for a person: one section per kind of item, each
// item with the command that deals with it.
func printAttention(w io.Writer, a view.Attention) {
	if a.Counts.Total == 0 {
		fmt.Fprintln(w, "nothing needs attention")
		return
	}
	age := func(s int64) string { return (time.Duration(s) * time.Second).String() }
	if len(a.Blocked) > 0 {
		fmt.Fprintf(w, "blocked handlers (%d):\n", len(a.Blocked))
		for _, b := range a.Blocked {
			fmt.Fprintf(w, "  %s/%s: run %s is %s: %s\n", b.Workflow, b.Handler, b.RunID, b.Status, oneLine(b.Reason, 200))
			for _, x := range b.Actions {
				fmt.Fprintf(w, "    %s: %s\n      %s\n", x.Kind, x.Hint, x.Command)
			}
		}
	}
	if len(a.Indeterminate) > 0 {
		fmt.Fprintf(w, "indeterminate mutations (%d):\n", len(a.Indeterminate))
		for _, m := range a.Indeterminate {
			fmt.Fprintf(w, "  %s %s of %s/%s (run %s), %s old, key %s\n    params: %s\n    scripthost resolve %s --as applied|failed|skipped\n",
				m.ID, m.Tool, m.Workflow, m.Handler, m.RunID, age(m.AgeSeconds), m.IdempotencyKey, oneLine(string(m.Params), 300), m.ID)
		}
	}
	if len(a.FailedRuns) > 0 {
		fmt.Fprintf(w, "failed runs (%d):\n", len(a.FailedRuns))
		for _, r := range a.FailedRuns {
			fmt.Fprintf(w, "  %s %s/%s %s: %s\n", r.ID, r.Workflow, r.Handler, r.Status, oneLine(r.Error, 200))
		}
	}
	if len(a.Approvals) > 0 {
		fmt.Fprintf(w, "agent calls waiting for approval (%d):\n", len(a.Approvals))
		for _, x := range a.Approvals {
			fmt.Fprintf(w, "  session %s (%s) call %s: %s %s, %s old\n    scripthost agent approve|deny %s %s\n",
				x.Session, x.Task, x.Call, x.Tool, oneLine(string(x.Arguments), 200), age(x.AgeSeconds), x.Session, x.Call)
		}
	}
	if len(a.StaleHosts) > 0 {
		fmt.Fprintf(w, "hosts that stopped renewing (%d):\n", len(a.StaleHosts))
		for _, l := range a.StaleHosts {
			fmt.Fprintf(w, "  %s holds %s, expired %s ago: another host takes it over at its next claim\n",
				l.Owner, l.Workflow, age(l.ExpiredSeconds))
		}
	}
}

func newHostsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "hosts",
		Short: "List the hosts that share the ledger, the workflows each holds, and the takeovers",
		Long: `List the hosts that share a PostgreSQL ledger: the workflows whose leases each
holds now, with when each lease expires, each host's last renewal, and the newest
takeovers (which host took which workflow from which, when, and after how long
without a renewal). A host claims a workflow's lease for each pass over it and
releases it after, so a workflow between passes is listed as free.

A host's state is renewing (it holds a lease it renews), stale (every lease it holds
has expired: it stopped renewing them, and the next host to claim each takes it
over; attention lists these too), taken over (it holds nothing and a workflow was
taken from it after its last renewal: it stopped), or idle (it holds nothing now).
The ledger keeps the newest 1000 takeovers and forgets hosts silent for 7 days. A
SQLite ledger has one host and no leases.

--json prints what GET /api/v1/hosts answers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				h, err := view.HostsOf(cmd.Context(), store, time.Now)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(g.Stdout, h)
				}
				return printHosts(g.Stdout, h)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the hosts as JSON")
	return cmd
}

// printHosts prints the hosts report for a person: one row per host and lease, the
// free workflows, then the takeovers, newest first.
func printHosts(w io.Writer, h view.Hosts) error {
	if !h.Shared {
		fmt.Fprintln(w, "this ledger is not shared (SQLite): one host, no leases")
		return nil
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	var rows [][]string
	for _, x := range h.Hosts {
		renewed := stamp(x.RenewedAt)
		if !x.RenewedAt.IsZero() {
			renewed += fmt.Sprintf(" (%s ago)", time.Duration(x.SilentSeconds)*time.Second)
		}
		if len(x.Leases) == 0 {
			rows = append(rows, []string{x.Owner, x.State, renewed, "-", "-", "-"})
		}
		for _, l := range x.Leases {
			exp := stamp(l.ExpiresAt)
			if l.Expired {
				exp += " (expired)"
			}
			rows = append(rows, []string{x.Owner, x.State, renewed, l.Workflow, fmt.Sprint(l.Claims), exp})
		}
	}
	for _, f := range h.Free {
		rows = append(rows, []string{"-", "-", "-", f.Workflow, fmt.Sprint(f.Claims), "free"})
	}
	if err := table(w, "HOST\tSTATE\tLAST RENEWAL\tWORKFLOW\tCLAIMS\tLEASE EXPIRES", rows); err != nil {
		return err
	}
	if len(h.Takeovers) == 0 {
		fmt.Fprintln(w, "\nno takeovers")
		return nil
	}
	fmt.Fprintf(w, "\ntakeovers (%d, newest first):\n", len(h.Takeovers))
	rows = rows[:0]
	for _, x := range h.Takeovers {
		rows = append(rows, []string{stamp(x.At), x.Workflow, x.From, x.To,
			(time.Duration(x.SilentMS) * time.Millisecond).String(), fmt.Sprint(x.Token)})
	}
	return table(w, "TAKEN AT\tWORKFLOW\tFROM\tTO\tSILENT FOR\tCLAIM", rows)
}

func newOverviewCmd(g *globals) *cobra.Command {
	var asJSON bool
	var window time.Duration
	cmd := &cobra.Command{
		Use:   "overview",
		Short: "Show the ledger at a glance: runs by status, run and failure rates, phase times",
		Long: `Show the ledger at a glance: every run counted by the status operators see, the
runs created and the runs that failed per minute over --window, and the 50th and 99th
percentile of each phase's time over the phases that ended in the window.

--json prints what GET /api/v1/overview?window=... answers, field for field.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if window <= 0 {
				return usagef("--window must be positive, got %s", window)
			}
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				o, err := view.OverviewOf(cmd.Context(), store, time.Now, window)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(g.Stdout, o)
				}
				return printOverview(g.Stdout, o)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the overview as JSON")
	cmd.Flags().DurationVar(&window, "window", time.Hour, "the window the rates and phase times cover")
	return cmd
}

// printOverview prints the overview for a person, as the Overview page shows it.
func printOverview(w io.Writer, o view.Overview) error {
	win := time.Duration(o.WindowSeconds) * time.Second
	fmt.Fprintf(w, "runs (last %s): %.2f /min\nfailures (last %s): %.2f /min\n\n", win, o.RunsPerSecond*60, win, o.FailuresPerSecond*60)
	statuses := slices.Sorted(maps.Keys(o.Runs))
	rows := make([][]string, 0, len(statuses))
	for _, st := range statuses {
		rows = append(rows, []string{st, fmt.Sprint(o.Runs[st])})
	}
	if err := table(w, "STATUS\tRUNS", rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	rows = rows[:0]
	for _, p := range o.Phases {
		rows = append(rows, []string{p.Phase, fmt.Sprint(p.Count), fmt.Sprintf("%d ms", p.P50MS), fmt.Sprintf("%d ms", p.P99MS)})
	}
	return table(w, "PHASE\tCOUNT\tP50\tP99", rows)
}
