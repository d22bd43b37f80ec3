package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrateIdleRelease: a ledger at schema version 9 with a released lease keeps it
// once migration 10 adds the idle releases, not idle (nothing says its last pass found
// nothing); a release said idle after the migration is listed so until the next claim.
func TestMigrateIdleRelease(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	migrateTo(t, url, "mig10", 9,
		`INSERT INTO leases (workflow, owner, claims, expires_at, claimed_at) VALUES ('charges', '', 3, 'epoch', now())`)
	s := open(t, url, postgres.Options{Schema: "mig10"})
	idle := func() bool {
		t.Helper()
		ls, err := s.Leases(ctx)
		if err != nil || len(ls) != 1 || ls[0].Workflow != "charges" {
			t.Fatalf("leases: got %+v %v, want charges'", ls, err)
		}
		return ls[0].Idle
	}
	if idle() {
		t.Error("lease released before the migration: listed idle")
	}
	l, ok, err := s.ClaimLease(ctx, "charges", "host-a", time.Minute)
	if err != nil || !ok || l.Token != 4 {
		t.Fatalf("claim: %+v %v %v", l, ok, err)
	}
	if idle() {
		t.Error("held lease listed idle")
	}
	l.Idle = true
	if _, err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if !idle() {
		t.Error("lease given back idle: not listed idle")
	}
	if _, ok, err := s.ClaimLease(ctx, "charges", "host-b", time.Minute); err != nil || !ok {
		t.Fatalf("claim by host-b: %v %v", ok, err)
	}
	if idle() {
		t.Error("lease claimed again: still listed idle")
	}
}
