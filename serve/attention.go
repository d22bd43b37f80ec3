package serve

import (
	"net/http"
	"time"

	"github.com/scripthost/scripthost/internal/view"
)

// attention answers what waits for a person (view.NeedsAttention), as
// `scripthost attention --json` prints it.
func (s *Server) attention(w http.ResponseWriter, r *http.Request) error {
	a, err := view.NeedsAttention(r.Context(), s.cfg.Store, view.AttentionOptions{Clock: s.cfg.Clock})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a)
	return nil
}

// overview answers the ledger at a glance (view.OverviewOf) over the window the
// query names (a Go duration; default an hour).
func (s *Server) overview(w http.ResponseWriter, r *http.Request) error {
	var window time.Duration
	if v := (query{r}).str("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return badf("window=%q: want a duration such as 1h or 15m", v)
		}
		window = d
	}
	o, err := view.OverviewOf(r.Context(), s.cfg.Store, s.cfg.Clock, window)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, o)
	return nil
}

// hosts answers which host holds which workflow (view.HostsOf).
func (s *Server) hosts(w http.ResponseWriter, r *http.Request) error {
	h, err := view.HostsOf(r.Context(), s.cfg.Store, s.cfg.Clock)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}
