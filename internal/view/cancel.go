package view

import (
	"context"
	"fmt"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// Cancelled is what a cancel did: the run as it is now, and, when its mutation's
// outcome was not known yet, that the cancel waits for it (Requested).
type Cancelled struct {
	Run       scripthost.Run `json:"run"`
	Requested bool           `json:"requested"`
	Message   string         `json:"message"`
}

// Cancel cancels run id (ledger.Store.CancelRun): at once when no mutation of it is in
// flight, else once its outcome is recorded.
func Cancel(ctx context.Context, store ledger.Store, id string, c ledger.Cancel) (Cancelled, error) {
	run, err := store.CancelRun(ctx, id, c)
	if err != nil {
		return Cancelled{}, fmt.Errorf("cancel run %s: %w", id, err)
	}
	out := Cancelled{Run: run}
	if run.Status == scripthost.StatusCancelled {
		out.Message = fmt.Sprintf("run %s cancelled", run.ID)
		return out, nil
	}
	out.Requested = true
	m, err := store.RunMutation(ctx, id)
	if err != nil {
		return out, fmt.Errorf("cancel run %s: %w", id, err)
	}
	out.Message = fmt.Sprintf("run %s: cancel requested; its mutation %s is %s, so it is cancelled once the outcome is recorded (the side effect is kept)",
		run.ID, m.ID, m.Status)
	return out, nil
}
