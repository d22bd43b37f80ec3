package serve

import (
	"net/http"

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
