package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestLeaseHistory: a host that claims and renews leases is listed with its last
// renewal; a host that stops renewing loses its lease to another host, and the
// takeover is kept with both hosts, the workflow, the former holder's last renewal and
// the lease's claim count; a lease released and claimed again is no takeover.
func TestLeaseHistory(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.URL(t), postgres.Options{})
	// Claimed for long, renewed for a short while: the renewal cannot come too late
	// however slow the machine, and the lease then runs out soon.
	a, ok, err := s.ClaimLease(ctx, "charges", "host-a", time.Hour)
	if err != nil || !ok {
		t.Fatalf("claim by host-a: %v %v", ok, err)
	}
	first := a.RenewedAt
	if a, err = s.RenewLease(ctx, a, 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if a.RenewedAt.IsZero() || !a.RenewedAt.Before(a.ExpiresAt) {
		t.Fatalf("renewed lease: renewed_at %v, expires %v", a.RenewedAt, a.ExpiresAt)
	}
	free, ok, err := s.ClaimLease(ctx, "orders", "host-b", time.Hour)
	if err != nil || !ok {
		t.Fatalf("claim orders by host-b: %v %v", ok, err)
	}
	if _, err := s.ReleaseLease(ctx, free); err != nil {
		t.Fatal(err)
	}
	o, ok, err := s.ClaimLease(ctx, "orders", "host-a", time.Hour)
	if err != nil || !ok {
		t.Fatalf("claim released orders by host-a: %v %v", ok, err)
	}
	time.Sleep(time.Until(a.ExpiresAt) + 50*time.Millisecond) // host-a's charges lease runs out
	b, ok, err := s.ClaimLease(ctx, "charges", "host-b", time.Hour)
	if err != nil || !ok || b.TakenFrom != "host-a" {
		t.Fatalf("takeover by host-b: %+v %v %v", b, ok, err)
	}

	tk, err := s.Takeovers(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tk) != 1 {
		t.Fatalf("takeovers: got %+v, want the one of charges", tk)
	}
	x := tk[0]
	if x.Workflow != "charges" || x.From != "host-a" || x.To != "host-b" || x.Token != b.Token ||
		!x.RenewedAt.Equal(a.RenewedAt) || !x.At.After(a.ExpiresAt) {
		t.Errorf("takeover: got %+v, want charges from host-a (renewed %v) to host-b after %v, token %d",
			x, a.RenewedAt, a.ExpiresAt, b.Token)
	}
	hosts, err := s.LeaseHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 2 || hosts[0].Owner != "host-a" || hosts[1].Owner != "host-b" {
		t.Fatalf("hosts: got %+v, want host-a and host-b", hosts)
	}
	// A host's claims write its renewal at most once a second (a takeover always):
	// host-a's is that of its first claim or of its claim of orders.
	if ra := hosts[0].RenewedAt; ra.Before(first) || ra.After(o.RenewedAt) || !hosts[1].RenewedAt.Equal(x.At) || !x.At.Equal(b.RenewedAt) {
		t.Errorf("hosts' last renewals: got %+v, want host-a's between its first claim (%v) and its claim of orders (%v), and host-b's at the takeover (%v)",
			hosts, first, o.RenewedAt, x.At)
	}
	leases, err := s.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if l.RenewedAt.IsZero() {
			t.Errorf("lease %s: no renewed_at", l.Workflow)
		}
	}
}

// TestClaimsDoNotQueueOnHostHistory: a host's claims and renewals do not wait for its
// row in the lease history, which another transaction holds: the host's renewal there
// is written by one claim or renewal at a time, at most once a second, so that the
// leases of its workflows do not queue on that one row.
func TestClaimsDoNotQueueOnHostHistory(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{Schema: "hostrow"})
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	if _, ok, err := s.ClaimLease(ctx, "orders", "host-a", time.Hour); err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var owner string
	if err := tx.QueryRow(ctx, `SELECT owner FROM hostrow.lease_hosts WHERE owner = 'host-a' FOR UPDATE`).Scan(&owner); err != nil {
		t.Fatalf("lock host-a's history row: %v", err)
	}
	// Without the once-a-second rule these wait for tx, here for ever.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	l, ok, err := s.ClaimLease(cctx, "charges", "host-a", time.Hour)
	if err != nil || !ok {
		t.Fatalf("claim while another transaction holds the host's history row: got ok=%v err=%v, want the lease", ok, err)
	}
	if _, err := s.ReleaseLease(cctx, l); err != nil {
		t.Fatal(err)
	}
	again, ok, err := s.ClaimLease(cctx, "charges", "host-a", time.Hour)
	if err != nil || !ok || again.Token != l.Token+1 {
		t.Fatalf("claim of a released lease: got %+v ok=%v err=%v, want the lease, token %d", again, ok, err, l.Token+1)
	}
	if _, err := s.RenewLease(cctx, again, time.Hour); err != nil {
		t.Fatalf("renewal while another transaction holds the host's history row: %v", err)
	}
}

// TestLeaseHistoryBounds: a takeover drops the takeovers beyond the newest 1000, and a
// host seen for the first time drops the hosts silent for more than 7 days that hold no
// lease.
func TestLeaseHistoryBounds(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{Schema: "hist"})
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	for _, q := range []string{
		`SET search_path TO hist`,
		`INSERT INTO lease_takeovers (workflow, from_owner, to_owner, taken_at, renewed_at, claims)
			SELECT 'old', 'x', 'y', now() - interval '1 day', now() - interval '1 day', n FROM generate_series(1, 1000) n`,
		`INSERT INTO lease_hosts (owner, first_seen, renewed_at) VALUES
			('gone', now() - interval '9 days', now() - interval '8 days'),
			('holder', now() - interval '9 days', now() - interval '8 days'),
			('recent', now() - interval '2 days', now() - interval '1 day')`,
		`INSERT INTO leases (workflow, owner, claims, expires_at, claimed_at, renewed_at)
			VALUES ('charges', 'holder', 1, now() - interval '8 days', now() - interval '8 days', now() - interval '8 days')`,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	if _, ok, err := s.ClaimLease(ctx, "charges", "newcomer", time.Hour); err != nil || !ok {
		t.Fatalf("takeover by newcomer: %v %v", ok, err)
	}
	tk, err := s.Takeovers(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tk) != 1000 || tk[0].Workflow != "charges" || tk[0].From != "holder" || tk[len(tk)-1].Token != 2 {
		t.Errorf("takeovers: got %d, newest %+v, oldest %+v; want 1000, newest charges from holder, oldest the second old one",
			len(tk), tk[0], tk[len(tk)-1])
	}
	hosts, err := s.LeaseHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var owners []string
	for _, h := range hosts {
		owners = append(owners, h.Owner)
	}
	// holder is dropped too: its lease went to newcomer in the same claim.
	if len(owners) != 2 || owners[0] != "newcomer" || owners[1] != "recent" {
		t.Errorf("hosts after a new host's first claim: got %q, want newcomer and recent", owners)
	}
}
