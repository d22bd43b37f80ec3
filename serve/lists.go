package serve

import (
	"net/http"
	"net/url"

	"github.com/scripthost/scripthost/internal/view"
)

// list reads the paging parameters every list endpoint shares: limit, cursor (a
// next cursor from an earlier page) and q (the search).
func (q query) list() (view.List, error) {
	limit, err := q.limit()
	if err != nil {
		return view.List{}, err
	}
	l := view.List{Limit: limit, Cursor: q.str("cursor"), Search: q.str("q")}
	if l.Cursor != "" {
		if _, err := view.DecodeCursor(l.Cursor); err != nil {
			return l, badf("cursor=%q: %v", l.Cursor, err)
		}
	}
	return l, nil
}

// writePage answers one page of a listing: the items as the JSON array the listing
// always answered, and the cursor of the next, older page in the X-Next-Cursor header
// and as a Link rel="next" (none on the last page).
func writePage[T any](w http.ResponseWriter, r *http.Request, pg view.Page[T]) {
	if pg.Next != "" {
		w.Header().Set("X-Next-Cursor", pg.Next)
		u := *r.URL
		v := u.Query()
		v.Set("cursor", pg.Next)
		u.RawQuery = v.Encode()
		w.Header().Set("Link", "<"+(&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String()+`>; rel="next"`)
	}
	writeJSON(w, http.StatusOK, pg.Items)
}
