package view

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// ErrBadCursor refuses a cursor this host did not hand out.
var ErrBadCursor = errors.New("not a cursor from a listing's next")

// cursorPrefix versions the cursor's encoding.
const cursorPrefix = "c1."

// EncodeCursor is the opaque cursor that continues a listing after k.
func EncodeCursor(k ledger.PageKey) string {
	raw := strconv.FormatInt(k.At.UnixNano(), 10) + "." + k.ID
	return cursorPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeCursor reads a cursor EncodeCursor made.
func DecodeCursor(s string) (ledger.PageKey, error) {
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return ledger.PageKey{}, ErrBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return ledger.PageKey{}, ErrBadCursor
	}
	at, id, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return ledger.PageKey{}, ErrBadCursor
	}
	return ledger.PageKey{At: time.Unix(0, n).UTC(), ID: id}, nil
}

// List is how a listing is asked for: a page of Limit items (0: all) after Cursor
// (empty: from the newest), matching Search.
type List struct {
	Limit  int
	Cursor string
	Search string
}

// Paged reports whether l asks for anything but the whole listing.
func (l List) Paged() bool { return l.Limit > 0 || l.Cursor != "" || l.Search != "" }

// ledgerPage is the ledger's page for l.
func (l List) ledgerPage() (*ledger.Page, error) {
	p := &ledger.Page{}
	if l.Cursor != "" {
		k, err := DecodeCursor(l.Cursor)
		if err != nil {
			return nil, err
		}
		p.After = &k
	}
	return p, nil
}

// Page is one page of a listing and the cursor of the next, older one ("": none).
type Page[T any] struct {
	Items []T
	Next  string
}

// pageOf reads one page through list, which lists newest first; oldestFirst turns
// the page around, for the listings shown oldest first.
func pageOf[T any](l List, oldestFirst bool, list func(p *ledger.Page, limit int) ([]T, error), key func(T) ledger.PageKey) (Page[T], error) {
	p, err := l.ledgerPage()
	if err != nil {
		return Page[T]{}, err
	}
	n := l.Limit
	if n > 0 {
		n++ // one more tells whether a next page exists
	}
	items, err := list(p, n)
	if err != nil {
		return Page[T]{}, err
	}
	out := Page[T]{Items: items}
	if l.Limit > 0 && len(items) > l.Limit {
		out.Items = items[:l.Limit]
		out.Next = EncodeCursor(key(out.Items[l.Limit-1]))
	}
	if out.Items == nil {
		out.Items = []T{}
	}
	if oldestFirst {
		slices.Reverse(out.Items)
	}
	return out, nil
}

// RunsPage lists one page of the runs matching f, oldest first within the page.
func RunsPage(ctx context.Context, store ledger.Store, f ledger.RunFilter, l List) (Page[scripthost.Run], error) {
	f.Search = l.Search
	return pageOf(l, true, func(p *ledger.Page, n int) ([]scripthost.Run, error) {
		f.Page, f.Limit = p, n
		return store.Runs(ctx, f)
	}, func(r scripthost.Run) ledger.PageKey { return ledger.PageKey{At: r.CreatedAt, ID: r.ID} })
}

// MutationsPage lists one page of the mutations matching f, oldest first within the
// page.
func MutationsPage(ctx context.Context, store ledger.Store, f ledger.MutationFilter, l List) (Page[Mutation], error) {
	f.Search = l.Search
	pg, err := pageOf(l, true, func(p *ledger.Page, n int) ([]scripthost.Mutation, error) {
		f.Page, f.Limit = p, n
		return store.Mutations(ctx, f)
	}, func(m scripthost.Mutation) ledger.PageKey { return ledger.PageKey{At: m.CreatedAt, ID: m.ID} })
	if err != nil {
		return Page[Mutation]{}, err
	}
	out := Page[Mutation]{Items: make([]Mutation, 0, len(pg.Items)), Next: pg.Next}
	for _, m := range pg.Items {
		out.Items = append(out.Items, OfMutation(m))
	}
	return out, nil
}

// EventsPage lists one page of the topic events matching f, oldest first within the
// page.
func EventsPage(ctx context.Context, store ledger.Store, f ledger.EventFilter, l List) (Page[scripthost.Event], error) {
	f.Search = l.Search
	return pageOf(l, true, func(p *ledger.Page, n int) ([]scripthost.Event, error) {
		f.Page, f.Limit = p, n
		return store.Events(ctx, f)
	}, func(e scripthost.Event) ledger.PageKey {
		return ledger.PageKey{At: e.CreatedAt, ID: strconv.FormatInt(e.Seq, 10)}
	})
}

// AgentSessionsPage lists one page of the agent sessions matching f, newest first
// as agent sessions are listed.
func AgentSessionsPage(ctx context.Context, as ledger.AgentStore, f ledger.AgentSessionFilter, l List) (Page[ledger.AgentSession], error) {
	f.Search = l.Search
	return pageOf(l, false, func(p *ledger.Page, n int) ([]ledger.AgentSession, error) {
		f.Page, f.Limit = p, n
		return as.AgentSessions(ctx, f)
	}, func(a ledger.AgentSession) ledger.PageKey { return ledger.PageKey{At: a.CreatedAt, ID: a.ID} })
}

// ExecutionsPage lists one page of the execution summaries matching f, oldest first
// within the page.
func ExecutionsPage(ctx context.Context, store ledger.Store, f ledger.ExecutionSummaryFilter, l List) (Page[ledger.ExecutionSummary], error) {
	f.Search = l.Search
	return pageOf(l, true, func(p *ledger.Page, n int) ([]ledger.ExecutionSummary, error) {
		f.Page, f.Limit = p, n
		return store.ExecutionSummaries(ctx, f)
	}, func(e ledger.ExecutionSummary) ledger.PageKey {
		return ledger.PageKey{At: e.StartedAt, ID: e.ExecutionID}
	})
}

// Topic is one topic as GET /api/v1/topics and `scripthost events topics` show it:
// its totals and the age of its backlog (the oldest pending event) at the report's
// time.
type Topic struct {
	ledger.TopicStats
	BacklogSeconds int64 `json:"backlog_seconds"`
}

// Topics sums up every topic (of workflow, when given) at now.
func Topics(ctx context.Context, store ledger.Store, workflow string, now time.Time) ([]Topic, error) {
	ts, err := store.Topics(ctx, workflow)
	if err != nil {
		return nil, err
	}
	out := make([]Topic, 0, len(ts))
	for _, t := range ts {
		v := Topic{TopicStats: t}
		if !t.OldestPending.IsZero() {
			v.BacklogSeconds = max(0, int64(now.Sub(t.OldestPending)/time.Second))
		}
		out = append(out, v)
	}
	return out, nil
}
