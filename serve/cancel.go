package serve

import (
	"context"
	"net/http"

	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

// cancel cancels a run (view.Cancel), recorded in the audit trail.
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Reason string `json:"reason"`
		By     string `json:"by"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	id := r.PathValue("id")
	by := operator(body.By)
	return s.act(w, r, "cancel", id, by, body, func(ctx context.Context) (any, error) {
		c, err := view.Cancel(ctx, s.cfg.Store, id, ledger.Cancel{Reason: body.Reason, By: by})
		if err != nil {
			return nil, err
		}
		s.wake(c.Run.Workflow) // released events go to a new run
		return c, nil
	})
}
