package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

func init() { commands = append(commands, newCancelCmd) }

func newCancelCmd(g *globals) *cobra.Command {
	var reason, by, status string
	var b bulkFlags
	cmd := &cobra.Command{
		Use:   "cancel RUN_ID [--reason TEXT] | cancel --workflow W [--handler H] [--status S] [-q TEXT] [--yes]",
		Short: "Stop a run for good, or every run a filter selects",
		Long: `Cancel a run that is not final. A run before its mutation is cancelled at once and
its reserved events are released: the next run of its handler takes them (skip an
event with scripthost events skip to set it aside). A run whose mutation was applied
is cancelled with its events consumed: the side effect is kept and its next phase
does not run. A run whose mutation is in flight (or being reconciled, or
indeterminate) is only marked: it is cancelled once the outcome is recorded, so no
side effect is lost or made twice. The cancel is recorded in the audit trail.

With a filter (--workflow, --handler, --status, --search) instead of a run id, it
lists every run the filter selects that is not final and cancels nothing; add --yes
to cancel exactly those, each recorded in the audit trail with its own result.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			by := approver(by)
			if b.set(cmd) {
				if len(args) > 0 {
					return usagef("give a run id or a filter, not both")
				}
				b.f.Status = status
				return withStore(cmd.Context(), g, func(store ledger.Store) error {
					return runBulk(cmd.Context(), g, store, view.BulkCancel, b, view.BulkRequest{By: by, Reason: reason})
				})
			}
			if len(args) == 0 {
				return usagef("give a run id, or a filter (--workflow, --handler, --status, --search)")
			}
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				req := map[string]string{"reason": reason}
				res, err := recordCLI(cmd.Context(), store, "cancel", args[0], by, req, func(ctx context.Context) (any, error) {
					return view.Cancel(ctx, store, args[0], ledger.Cancel{Reason: reason, By: by})
				})
				if err != nil {
					return err
				}
				fmt.Fprintln(g.Stdout, res.(view.Cancelled).Message)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the run is cancelled, for the run and the audit trail")
	cmd.Flags().StringVar(&by, "by", "", "who cancels, for the audit trail (default: the current user)")
	cmd.Flags().StringVar(&status, "status", "", "every run in this status (with a filter)")
	b.add(cmd, "run")
	return cmd
}
