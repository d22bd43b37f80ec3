package postgres_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrate12LogWithoutForeignKeys: a ledger at the schema version before the
// migration that drops the log tables' foreign keys into runs keeps its runs, their
// snapshots and lifecycle events and its other rows; afterwards run_snapshots and
// lifecycle_events have no foreign key, every other foreign key is as it was, and
// the store goes on logging the migrated run.
func TestMigrate12LogWithoutForeignKeys(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c := migrateTo(t, url, "mig12", logWithoutFKVersion(t)-1,
		`INSERT INTO workflows (name, latest_version, created_at) VALUES ('orders', 1, 1)`,
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at)
			VALUES ('r1', 'orders', 1, 'ship', 'consumer', 'pending', 'active', 1, 1)`,
		`INSERT INTO run_snapshots (run_id, seq, phase, status, run, at)
			VALUES ('r1', 1, 'pending', 'active', '{"id":"r1","phase":"pending","status":"active"}', 1)`,
		`INSERT INTO lifecycle_events (run_id, type, data, at) VALUES ('r1', 'paused', '{"why":"before"}', 2)`,
		`INSERT INTO mutations (id, run_id, namespace, method, idempotency_key, status, created_at, updated_at)
			VALUES ('m1', 'r1', 'Shop', 'ship', 'k1', 'applied', 3, 3)`,
		`INSERT INTO events (workflow, topic, message_id, status, reserved_by, created_at)
			VALUES ('orders', 'in', 'e1', 'reserved', 'r1', 4)`)
	before := foreignKeys(t, c, "mig12")
	for _, fk := range []string{"run_snapshots_run_id_fkey", "lifecycle_events_run_id_fkey"} {
		if !slices.Contains(before, fk) {
			t.Fatalf("before the migration: foreign keys %v, want %s among them", before, fk)
		}
	}

	s := open(t, url, postgres.Options{Schema: "mig12"})
	after := foreignKeys(t, c, "mig12")
	want := slices.DeleteFunc(slices.Clone(before), func(fk string) bool {
		return fk == "run_snapshots_run_id_fkey" || fk == "lifecycle_events_run_id_fkey"
	})
	if !slices.Equal(after, want) {
		t.Errorf("foreign keys after the migration:\n got  %v\n want %v", after, want)
	}
	for _, fk := range []string{"mutations_run_id_fkey", "events_reserved_by_fkey", "runs_retry_of_fkey", "runs_superseded_by_fkey"} {
		if !slices.Contains(after, fk) {
			t.Errorf("after the migration: foreign keys %v, want %s kept", after, fk)
		}
	}

	snaps, err := s.Snapshots(ctx, "r1")
	if err != nil || len(snaps) != 1 || snaps[0].Seq != 1 || snaps[0].Phase != scripthost.RunPending {
		t.Fatalf("snapshots of r1: got %+v %v, want its one snapshot", snaps, err)
	}
	evs, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: "r1"})
	if err != nil || len(evs) != 1 || evs[0].Type != ledger.EventPaused || string(evs[0].Data) != `{"why":"before"}` {
		t.Fatalf("lifecycle events of r1: got %+v %v, want its paused event", evs, err)
	}
	if m, err := s.RunMutation(ctx, "r1"); err != nil || m.ID != "m1" {
		t.Fatalf("mutation of r1: got %+v %v, want m1", m, err)
	}
	if e, err := s.Events(ctx, ledger.EventFilter{Workflow: "orders"}); err != nil || len(e) != 1 || e[0].ReservedBy != "r1" {
		t.Fatalf("events: got %+v %v, want e1 reserved by r1", e, err)
	}

	// The store logs the migrated run as before: its next snapshot follows the first,
	// an attached event is logged with it, and one naming no run of the ledger is
	// refused now that the schema would take it.
	next := ledger.NewLifecycleEvent("r1", ledger.EventPhaseStarted, map[string]string{"phase": "prepare"})
	if _, err := s.AdvancePhase(ledger.WithEvents(ctx, next), "r1", scripthost.RunPending, scripthost.RunPreparing); err != nil {
		t.Fatal(err)
	}
	if snaps, err := s.Snapshots(ctx, "r1"); err != nil || len(snaps) != 2 || snaps[1].Seq != 2 || snaps[1].Phase != scripthost.RunPreparing {
		t.Errorf("snapshots of r1 after a transition: got %+v %v, want a second in preparing", snaps, err)
	}
	lost := ledger.NewLifecycleEvent("r9", ledger.EventPaused, nil)
	if _, err := s.SetRunStatus(ledger.WithEvents(ctx, lost), "r1", ledger.StatusChange{Status: scripthost.StatusPausedApproval}); !strings.Contains(fmt.Sprint(err), `run "r9"`) {
		t.Errorf("an event of no run: got %v, want it refused naming r9", err)
	}
	if evs, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: "r9"}); err != nil || len(evs) != 0 {
		t.Errorf("lifecycle events of r9: got %+v %v, want none", evs, err)
	}
	// A run deleted by hand would leave its log naming a run that is gone: refused, as
	// the foreign keys refused it.
	if _, err := c.Exec(ctx, `DELETE FROM runs WHERE id = 'r1'`); !strings.Contains(fmt.Sprint(err), "runs are never deleted") {
		t.Errorf("DELETE of a run: got %v, want it refused", err)
	}
	if _, err := s.Run(ctx, "r1"); err != nil {
		t.Errorf("r1 after the refused DELETE: %v", err)
	}
}

// logWithoutFKVersion is the version of the migration that drops the log tables'
// foreign keys, from its file name.
func logWithoutFKVersion(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		if strings.HasSuffix(f, "_log_without_fk.sql") {
			return i + 1
		}
	}
	t.Fatalf("no migration *_log_without_fk.sql among %v", files)
	return 0
}

// foreignKeys lists the names of the foreign keys of schema's tables, sorted.
func foreignKeys(t *testing.T, c *pgx.Conn, schema string) []string {
	t.Helper()
	return texts(t, c, `SELECT conname FROM pg_constraint
		WHERE contype = 'f' AND connamespace = $1::regnamespace ORDER BY conname`, schema)
}
