package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrateLeaseHistory: a ledger at schema version 7 with a held lease keeps it once
// migration 8 adds the lease history: its last renewal is its last claim, its holder is
// listed as a host, and no takeover is invented; a takeover after the migration is kept.
func TestMigrateLeaseHistory(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	migrateTo(t, url, "mig8", 7,
		`INSERT INTO leases (workflow, owner, claims, expires_at, claimed_at)
			VALUES ('charges', 'host-a', 3, now() - interval '1 minute', now() - interval '2 minutes')`)
	s := open(t, url, postgres.Options{Schema: "mig8"})
	leases, err := s.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 1 || leases[0].Owner != "host-a" || leases[0].Token != 3 || leases[0].RenewedAt.IsZero() ||
		!leases[0].RenewedAt.Before(leases[0].ExpiresAt) {
		t.Fatalf("lease after the migration: got %+v, want host-a's, renewed at its claim", leases)
	}
	hosts, err := s.LeaseHosts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 1 || hosts[0].Owner != "host-a" || !hosts[0].RenewedAt.Equal(leases[0].RenewedAt) {
		t.Fatalf("hosts after the migration: got %+v, want host-a renewed at %v", hosts, leases[0].RenewedAt)
	}
	if tk, err := s.Takeovers(ctx, 0); err != nil || len(tk) != 0 {
		t.Fatalf("takeovers after the migration: got %+v %v, want none", tk, err)
	}
	l, ok, err := s.ClaimLease(ctx, "charges", "host-b", time.Hour)
	if err != nil || !ok || l.TakenFrom != "host-a" {
		t.Fatalf("takeover: %+v %v %v", l, ok, err)
	}
	tk, err := s.Takeovers(ctx, 0)
	if err != nil || len(tk) != 1 || tk[0].From != "host-a" || tk[0].To != "host-b" || !tk[0].RenewedAt.Equal(leases[0].RenewedAt) {
		t.Fatalf("takeovers: got %+v %v, want charges from host-a to host-b", tk, err)
	}
}
