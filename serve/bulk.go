package serve

import (
	"errors"
	"net/http"

	"github.com/scripthost/scripthost/internal/view"
)

// bulkBody is the body of POST /api/v1/bulk/{action}: the filter, and with confirm
// the token of the list to apply.
type bulkBody struct {
	view.BulkFilter
	view.BulkRequest
	Confirm string `json:"confirm"`
}

// bulkChanged is the 409 answer to a confirmation of a list that changed: the error
// and the list as it is now.
type bulkChanged struct {
	Error string        `json:"error"`
	Now   view.BulkPlan `json:"now"`
}

// bulk answers a bulk cancel, retry or resolve (view.PlanBulk, view.ApplyBulk):
// without confirm the list of what would change and its token; with the token, the
// action applied to exactly that list, each item recorded in the audit trail.
func (s *Server) bulk(w http.ResponseWriter, r *http.Request) error {
	var body bulkBody
	if err := decode(r, &body); err != nil {
		return err
	}
	action := r.PathValue("action")
	body.By = operator(body.By)
	ctx := r.Context()
	if body.Confirm == "" {
		plan, err := view.PlanBulk(ctx, s.cfg.Store, action, body.BulkFilter)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, plan)
		return nil
	}
	done, err := view.ApplyBulk(ctx, s.cfg.Store, s.cfg.Clock, action, body.BulkFilter, body.Confirm, body.BulkRequest,
		func(wf string) { s.wake(wf) })
	var changed *view.BulkChangedError
	if errors.As(err, &changed) {
		writeJSON(w, http.StatusConflict, bulkChanged{Error: err.Error(), Now: changed.Now})
		return nil
	}
	if err != nil {
		return err
	}
	s.cfg.Logger.Info("operator bulk action", "action", action, "by", body.By, "done", done.Done, "failed", done.Failed)
	writeJSON(w, http.StatusOK, done)
	return nil
}

// topics answers every topic's totals and backlog (view.Topics).
func (s *Server) topics(w http.ResponseWriter, r *http.Request) error {
	ts, err := view.Topics(r.Context(), s.cfg.Store, query{r}.str("workflow"), s.cfg.Clock())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ts)
	return nil
}
