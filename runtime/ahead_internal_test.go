package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// TestLeaseGoneDropsKeptEvents: what a host read ahead of a workflow's runs is kept
// across passes while it keeps the workflow's lease, and dropped when the lease is
// given back, handed over or lost (another host may change the events meanwhile).
func TestLeaseGoneDropsKeptEvents(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewServer(t).URL(t)
	st, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt, err := New(Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Tools: hostfuncs.NewRegistry(),
		Lease: LeaseOptions{Owner: "a", TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	src := `export default { topics: ['in'], consumers: { c: { subscribe: ['in'], prepare() { return null; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	pass := func(end func(h *heldLease)) {
		t.Helper()
		h, _, err := rt.hold(ctx, "w")
		if err != nil || h == nil {
			t.Fatalf("hold: %v, %v", h, err)
		}
		rt.keepAhead("w", "c", &hostfuncs.Peeked{Limit: readAhead, Events: map[string][]scripthost.Event{"in": {{Seq: 1, MessageID: "e"}}}})
		end(h)
	}
	kept := func() bool { _, _, ok := rt.takeAhead("w", "c"); return ok }

	pass(func(h *heldLease) { rt.letGo(ctx, "w", h, false, 0) })
	if !kept() {
		t.Error("lease kept for the next pass: the events read ahead are gone, want them kept")
	}
	pass(func(h *heldLease) { rt.letGo(ctx, "w", h, true, 0) })
	if kept() {
		t.Error("lease given back: events read ahead still kept")
	}
	pass(func(h *heldLease) {
		h.cancel(errors.New("lost"))
		rt.letGo(ctx, "w", h, false, 0)
	})
	if kept() {
		t.Error("lease lost: events read ahead still kept")
	}
	pass(func(h *heldLease) { rt.letGo(ctx, "w", h, false, time.Millisecond) })
	if kept() {
		t.Error("lease handed over: events read ahead still kept")
	}
}
