package sqlite

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestMigration7MovesSnapshots opens a ledger at schema version 6 whose runs have
// snapshots, interleaved and with a large one: migration 7 moves them into the
// lifecycle log, and the store reads back every snapshot as it was (number, phase,
// status, run, time) while the lifecycle events it lists are the events alone, as
// before. New snapshots of a migrated run follow the moved ones.
func TestMigration7MovesSnapshots(t *testing.T) {
	ctx := context.Background()
	big := `{"id":"r2","phase":"mutating","status":"active","input_state":{"s":"` + strings.Repeat("x", 9000) + `"}}`
	s := migratedFrom(t, 6,
		twoRunsSQL,
		`INSERT INTO lifecycle_events (seq, run_id, type, mutation_id, data, at) VALUES
			(1, 'r1', 'phase_started', '', NULL, 1),
			(2, 'r2', 'phase_started', '', '{"phase":"prepare"}', 3),
			(5, 'r1', 'committed', 'm1', '{"published":[]}', 2)`,
		`INSERT INTO run_snapshots (run_id, seq, phase, status, run, at) VALUES
			('r1', 1, 'pending', 'active', '{"id":"r1","phase":"pending","status":"active"}', 10),
			('r2', 1, 'pending', 'active', '{"id":"r2","phase":"pending","status":"active"}', 11),
			('r1', 2, 'committed', 'committed', '{"id":"r1","phase":"committed","status":"committed"}', 12),
			('r2', 2, 'mutating', 'active', '`+big+`', 13)`,
	)
	want := map[string][]ledger.Snapshot{
		"r1": {
			{RunID: "r1", Seq: 1, Phase: "pending", Status: "active", Run: json.RawMessage(`{"id":"r1","phase":"pending","status":"active"}`), At: time.Unix(0, 10).UTC()},
			{RunID: "r1", Seq: 2, Phase: "committed", Status: "committed", Run: json.RawMessage(`{"id":"r1","phase":"committed","status":"committed"}`), At: time.Unix(0, 12).UTC()},
		},
		"r2": {
			{RunID: "r2", Seq: 1, Phase: "pending", Status: "active", Run: json.RawMessage(`{"id":"r2","phase":"pending","status":"active"}`), At: time.Unix(0, 11).UTC()},
			{RunID: "r2", Seq: 2, Phase: "mutating", Status: "active", Run: json.RawMessage(big), At: time.Unix(0, 13).UTC()},
		},
	}
	for run, w := range want {
		got, err := s.Snapshots(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(w) {
			t.Fatalf("run %s: got %d snapshots, want %d", run, len(got), len(w))
		}
		for i := range w {
			g := got[i]
			if g.RunID != w[i].RunID || g.Seq != w[i].Seq || g.Phase != w[i].Phase || g.Status != w[i].Status ||
				string(g.Run) != string(w[i].Run) || !g.At.Equal(w[i].At) {
				t.Errorf("run %s snapshot %d: got %+v, want %+v", run, i+1, g, w[i])
			}
		}
	}
	evs, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, ev := range evs {
		seqs = append(seqs, ev.Seq)
	}
	if len(evs) != 3 || seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 5 {
		t.Errorf("lifecycle events after the migration: got seqs %v, want [1 2 5], the events alone", seqs)
	}
	var tables int
	if err := s.r.Get(&tables, `SELECT COUNT(*) FROM sqlite_schema WHERE name = 'run_snapshots'`); err != nil || tables != 0 {
		t.Errorf("run_snapshots: got %d tables (err %v), want it dropped", tables, err)
	}

	// A transition of a migrated run numbers its snapshot after the moved ones.
	if _, err := s.SetRunStatus(ctx, "r2", ledger.StatusChange{Status: scripthost.StatusPausedApproval}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Snapshots(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got); n != 3 || got[2].Seq != 3 || got[2].Status != scripthost.StatusPausedApproval {
		t.Errorf("after a transition: got %d snapshots, the last %+v, want a third, paused", n, got[n-1])
	}
}

// TestCorruptSnapshotNamed: a snapshot entry whose run is not JSON (a hand-edited or
// damaged file) makes Snapshots fail naming the run and the snapshot; the run's
// lifecycle events still list, and nothing is changed.
func TestCorruptSnapshotNamed(t *testing.T) {
	ctx := context.Background()
	s, ids := benchStore(t, 1, Options{})
	if err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO lifecycle_events (run_id, type, mutation_id, data, at) VALUES (?, 'snapshot', '', '{"phase":', 1)`, ids[0])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Snapshots(ctx, ids[0])
	if err == nil || !strings.Contains(err.Error(), "snapshot 2 of run "+ids[0]) {
		t.Errorf("got %v, want an error naming snapshot 2 of run %s", err, ids[0])
	}
	if _, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: ids[0]}); err != nil {
		t.Errorf("lifecycle events of the run: %v", err)
	}
}
