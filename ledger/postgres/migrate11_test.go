package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrate11SnapshotChanges: a ledger at schema version 10, whose snapshots are all
// whole, is at version 11 or later once opened (so that a binary reading every snapshot as
// whole refuses it as newer), reads its snapshots back as they were stored, and moves
// its runs on, the snapshots after the migration read back whole too.
func TestMigrate11SnapshotChanges(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	h := &history{t: t}
	run := scripthost.Run{ID: "r1", Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		Phase: scripthost.RunPending, Status: scripthost.StatusActive, Attempt: 1,
		InputState: json.RawMessage(`{"n":1}`), CreatedAt: at, UpdatedAt: at}
	h.add(run)
	pending := h.want[0]
	run.Phase, run.UpdatedAt = scripthost.RunPreparing, at.Add(time.Second)
	h.add(run)
	c := migrateTo(t, url, "mig11", 10,
		fmt.Sprintf(`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, attempt, input_state, created_at, updated_at)
			VALUES ('r1', 'wf', 1, 'h', 'consumer', 'preparing', 'active', 1, '{"n":1}', %d, %d)`, at.UnixNano(), at.Add(time.Second).UnixNano()),
		fmt.Sprintf(`INSERT INTO run_snapshots (run_id, seq, phase, status, run, at) VALUES
			('r1', 1, 'pending', 'active', '%s', %d), ('r1', 2, 'preparing', 'active', '%s', %d)`,
			h.want[0], at.UnixNano(), h.want[1], at.Add(time.Second).UnixNano()))
	s := open(t, url, postgres.Options{Schema: "mig11"})
	var v int
	if err := c.QueryRow(ctx, `SELECT MAX(version) FROM scripthost_schema`).Scan(&v); err != nil || v != postgres.SchemaVersion() || v < 11 {
		t.Fatalf("schema version: got %d (%v), binary %d; want the binary's, 11 or later", v, err, postgres.SchemaVersion())
	}
	h.check(ctx, s, "r1")
	if snaps := must(s.Snapshots(ctx, "r1"))(t); !bytes.Equal(snaps[0].Run, pending) {
		t.Errorf("first snapshot: got %s, want it as stored %s", snaps[0].Run, pending)
	}
	r, err := s.MarkPrepared(ctx, "r1", ledger.PrepareResult{Data: json.RawMessage(`{"p":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	h.add(r)
	if r, err = s.AdvancePhase(ctx, "r1", scripthost.RunPrepared, scripthost.RunMutating); err != nil {
		t.Fatal(err)
	}
	h.add(r)
	h.check(ctx, s, "r1")
}
