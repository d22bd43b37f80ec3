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
	var reason, by string
	cmd := &cobra.Command{
		Use:   "cancel RUN_ID [--reason TEXT]",
		Short: "Stop a run for good",
		Long: `Cancel a run that is not final. A run before its mutation is cancelled at once and
its reserved events are released: the next run of its handler takes them (skip an
event with scripthost events skip to set it aside). A run whose mutation was applied
is cancelled with its events consumed: the side effect is kept and its next phase
does not run. A run whose mutation is in flight (or being reconciled, or
indeterminate) is only marked: it is cancelled once the outcome is recorded, so no
side effect is lost or made twice. The cancel is recorded in the audit trail.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), g, func(store ledger.Store) error {
				by := approver(by)
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
	return cmd
}
