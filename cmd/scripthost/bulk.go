package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

// bulkFlags select the items of a bulk cancel, retry or resolve and confirm them.
type bulkFlags struct {
	f       view.BulkFilter
	yes     bool
	confirm string
	asJSON  bool
}

func (b *bulkFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&b.f.Workflow, "workflow", "", "every "+what+" of this workflow (instead of one id)")
	cmd.Flags().StringVar(&b.f.Handler, "handler", "", "every "+what+" of this handler")
	cmd.Flags().StringVarP(&b.f.Search, "search", "q", "", "every "+what+" whose ids, names, status or error contain this text")
	cmd.Flags().BoolVar(&b.yes, "yes", false, "with a filter: apply the action to the listed items (without it the list is only printed)")
	cmd.Flags().StringVar(&b.confirm, "confirm", "", "with a filter and --yes: apply only if the filter still selects the list this token was printed with")
	cmd.Flags().BoolVar(&b.asJSON, "json", false, "with a filter: print the list, or what was done, as JSON")
}

// set reports whether a filter was given (a bulk action rather than one id).
func (b *bulkFlags) set(cmd *cobra.Command) bool {
	for _, name := range []string{"workflow", "handler", "search", "status"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return true
		}
	}
	return false
}

// runBulk lists what action would change for the filter and, with --yes, applies it
// to exactly that list (view.ApplyBulk: each item through the one-item action and
// into the audit trail). Without --yes it only prints the list and how to confirm.
func runBulk(ctx context.Context, g *globals, store ledger.Store, action string, b bulkFlags, r view.BulkRequest) error {
	check := view.CheckBulkFilter(action, b.f)
	if b.yes {
		check = view.CheckBulk(action, b.f, r)
	}
	if check != nil {
		return usageError{err: check}
	}
	if b.confirm != "" && !b.yes {
		return usagef("--confirm goes with --yes")
	}
	plan, err := view.PlanBulk(ctx, store, action, b.f)
	if err != nil {
		return err
	}
	if !b.yes {
		if b.asJSON {
			return printJSON(g.Stdout, plan)
		}
		printBulkPlan(g, plan)
		if plan.Count > 0 {
			fmt.Fprintf(g.Stdout, "nothing done: add --yes to %s these %d (or --yes --confirm %s to refuse if the list changed)\n",
				action, plan.Count, plan.Token)
		}
		return nil
	}
	token := b.confirm
	if token == "" {
		token = plan.Token
	}
	done, err := view.ApplyBulk(ctx, store, time.Now, action, b.f, token, r, nil)
	if err != nil {
		return refusedError{err}
	}
	if b.asJSON {
		return printJSON(g.Stdout, done)
	}
	for _, res := range done.Results {
		if res.OK {
			fmt.Fprintf(g.Stdout, "%s  %s  done\n", res.ID, action)
		} else {
			fmt.Fprintf(g.Stdout, "%s  %s  refused: %s\n", res.ID, action, res.Error)
		}
	}
	fmt.Fprintf(g.Stdout, "%s: %d done, %d refused (each recorded in the audit trail)\n", action, done.Done, done.Failed)
	if done.Failed > 0 {
		return refusedError{fmt.Errorf("%s: %d of %d refused", action, done.Failed, done.Done+done.Failed)}
	}
	return nil
}

func printBulkPlan(g *globals, plan view.BulkPlan) {
	if plan.Count == 0 {
		fmt.Fprintf(g.Stdout, "the filter selects nothing to %s\n", plan.Action)
		return
	}
	rows := make([][]string, 0, len(plan.Items))
	for _, it := range plan.Items {
		rows = append(rows, []string{it.ID, it.Workflow, it.Handler, it.Status, it.Tool, oneLine(it.Error, 60)})
	}
	_ = table(g.Stdout, "ID\tWORKFLOW\tHANDLER\tSTATUS\tTOOL\tERROR", rows)
	fmt.Fprintf(g.Stdout, "%d to %s (token %s)\n", plan.Count, plan.Action, plan.Token)
}
