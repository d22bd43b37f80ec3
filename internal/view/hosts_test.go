package view_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestHosts claims leases in a throwaway PostgreSQL database for two hosts, one of
// which stops renewing (its lease expires), and checks that the report lists each
// host with its workflows, marks the silent one stale, and lists a released lease
// as free; then that the takeover of the expired lease moves the workflow to the
// other host, keeps the silent host listed as taken over with its last renewal, and
// lists the takeover with how long its former holder had been silent.
func TestHosts(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtest.URL(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, ok, err := s.ClaimLease(ctx, "charges", "host-a", time.Millisecond); err != nil || !ok {
		t.Fatalf("claim charges by host-a: %v %v", ok, err)
	}
	if _, ok, err := s.ClaimLease(ctx, "orders", "host-b", time.Hour); err != nil || !ok {
		t.Fatalf("claim orders by host-b: %v %v", ok, err)
	}
	l, ok, err := s.ClaimLease(ctx, "refunds", "host-b", time.Hour)
	if err != nil || !ok {
		t.Fatalf("claim refunds by host-b: %v %v", ok, err)
	}
	if _, err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // host-a's lease of 1ms runs out

	h, err := view.HostsOf(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Shared || len(h.Hosts) != 2 {
		t.Fatalf("hosts: got %+v, want host-a and host-b", h)
	}
	a, b := h.Hosts[0], h.Hosts[1]
	if a.Owner != "host-a" || !a.Stale || len(a.Leases) != 1 || a.Leases[0].Workflow != "charges" || !a.Leases[0].Expired {
		t.Errorf("host-a: got %+v, want stale, holding charges expired", a)
	}
	if b.Owner != "host-b" || b.Stale || len(b.Leases) != 1 || b.Leases[0].Workflow != "orders" || b.Leases[0].Expired {
		t.Errorf("host-b: got %+v, want live, holding orders", b)
	}
	if len(h.Free) != 1 || h.Free[0].Workflow != "refunds" || h.Free[0].Claims != 1 {
		t.Errorf("free: got %+v, want refunds, claimed once", h.Free)
	}

	taken, ok, err := s.ClaimLease(ctx, "charges", "host-b", time.Hour)
	if err != nil || !ok || taken.TakenFrom != "host-a" {
		t.Fatalf("takeover of charges: got %+v ok=%v err=%v, want it taken from host-a", taken, ok, err)
	}
	if h, err = view.HostsOf(ctx, s, nil); err != nil {
		t.Fatal(err)
	}
	if len(h.Hosts) != 2 || h.Hosts[1].Owner != "host-b" || len(h.Hosts[1].Leases) != 2 || h.Hosts[1].Leases[0].Claims != 2 ||
		h.Hosts[1].State != view.HostRenewing {
		t.Errorf("after the takeover: got %+v, want host-b renewing charges (claimed twice) and orders", h.Hosts)
	}
	// host-a holds nothing now; the ledger remembers it, its last renewal, and that
	// charges was taken from it after it stopped renewing.
	if a := h.Hosts[0]; a.Owner != "host-a" || len(a.Leases) != 0 || a.State != view.HostTakenOver || a.RenewedAt.IsZero() {
		t.Errorf("host-a after the takeover: got %+v, want taken over, with its last renewal", a)
	}
	if len(h.Takeovers) != 1 {
		t.Fatalf("takeovers: got %+v, want charges from host-a to host-b", h.Takeovers)
	}
	if x := h.Takeovers[0]; x.Workflow != "charges" || x.From != "host-a" || x.To != "host-b" || x.Token != 2 ||
		x.SilentMS < 20 || !x.RenewedAt.Equal(h.Hosts[0].RenewedAt) {
		t.Errorf("takeover: got %+v, want charges from host-a to host-b, claim 2, at least 20ms after host-a's last renewal", x)
	}
}

// TestHostsSQLite: a ledger one host owns has no leases, and says so.
func TestHostsSQLite(t *testing.T) {
	ctx := context.Background()
	s := must(sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{}))(t)
	t.Cleanup(func() { s.Close() })
	h, err := view.HostsOf(ctx, s, nil)
	if err != nil || h.Shared || len(h.Hosts) != 0 || h.Free == nil || h.Takeovers == nil {
		t.Errorf("got %+v, %v; want not shared, no hosts, empty lists", h, err)
	}
}
