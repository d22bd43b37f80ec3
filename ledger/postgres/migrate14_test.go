package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrate14PackedLog: a ledger at schema version 13 whose log holds an event per
// row and whose run_snapshots a snapshot per row. After migration 14 the old events
// keep their numbers, and a write's events of one run go in one row, numbered on from
// it: the log lists every event once, in order, whether read whole, by run, by type,
// after any event (one in the middle of a row included) or a page at a time, and its
// tail is the last row's last event. A write's snapshots of one run share a row too,
// numbered on from the run's last, old rows included.
func TestMigrate14PackedLog(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	c := migrateTo(t, url, "mig14", 13,
		`INSERT INTO workflows (name, latest_version, created_at) VALUES ('orders', 1, 1)`,
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, created_at, updated_at) VALUES
			('old', 'orders', 1, 'ship', 'consumer', 'committed', 'committed', 1, 1),
			('older', 'orders', 1, 'ship', 'consumer', 'emitting', 'active', 1, 1)`,
		`INSERT INTO run_snapshots (run_id, seq, phase, status, run, at) VALUES
			('older', 1, 'pending', 'active', '`+oldSnapshot("pending")+`', 1),
			('older', 2, 'emitting', 'active', '`+oldSnapshot("emitting")+`', 1)`,
		`INSERT INTO lifecycle_events (run_id, type, data, at) VALUES
			('old', 'phase_started', '{"phase":"prepare"}', 2),
			('old', 'phase_completed', '{"phase":"prepare"}', 3),
			('old', 'committed', NULL, 4)`)
	s := open(t, url, postgres.Options{Schema: "mig14"})
	if v := postgres.SchemaVersion(); v < 14 {
		t.Fatalf("binary schema version %d, want 14 or later", v)
	}

	// A run created with its in-flight mutation logs four events in one write, its
	// outcome two more: two rows of the log.
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "orders", Topic: "in", MessageID: "e1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	id := s.NewID()
	nr := ledger.NewRun{Workflow: "orders", Version: 1, Handler: "ship", Kind: scripthost.KindConsumer, ID: id,
		Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Data: json.RawMessage(`1`), Mutate: true,
			Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"e1"}}}}}
	wctx := ledger.WithEvents(ctx,
		ledger.NewLifecycleEvent(id, ledger.EventPhaseStarted, map[string]any{"phase": "prepare"}),
		ledger.NewLifecycleEvent(id, ledger.EventPhaseCompleted, map[string]any{"phase": "prepare"}),
		ledger.NewLifecycleEvent(id, ledger.EventPhaseStarted, map[string]any{"phase": "mutate"}))
	m, err := s.BeginMutation(wctx, ledger.NewMutation{RunID: id, Run: &nr, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{}`), InputHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyMutation(ledger.WithEvents(ctx, ledger.NewLifecycleEvent(id, ledger.EventPhaseCompleted, nil)), m.ID, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"lifecycle_events", "run_snapshots"} {
		var rows int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE run_id = $1`, id).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 2 {
			t.Errorf("%s rows of the run: got %d, want 2 (one per write)", table, rows)
		}
	}
	snaps, err := s.Snapshots(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for i, sn := range snaps {
		phases = append(phases, fmt.Sprintf("%d:%s", sn.Seq, sn.Phase))
		if sn.Seq != i+1 {
			t.Errorf("snapshot %d: numbered %d, want %d", i, sn.Seq, i+1)
		}
	}
	if got, want := strings.Join(phases, " "), "1:pending 2:preparing 3:prepared 4:mutating 5:mutated 6:emitting"; got != want {
		t.Errorf("snapshots of the run: got %s, want %s", got, want)
	}
	// A run whose snapshots an older version wrote a row each goes on from its last.
	if _, err := s.CommitConsumer(ctx, "older", ledger.Commit{State: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	snaps, err = s.Snapshots(ctx, "older")
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 3 || snaps[2].Seq != 3 || snaps[2].Phase != scripthost.RunCommitted || snaps[0].Phase != scripthost.RunPending {
		t.Errorf("snapshots of the older run: got %+v, want its two and the commit's as 3", snaps)
	}

	all, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for i, e := range all {
		labels = append(labels, fmt.Sprintf("%s:%s", e.RunID[:3], e.Label()))
		if i > 0 && e.Seq <= all[i-1].Seq {
			t.Errorf("event %d: seq %d after %d, want increasing", i, e.Seq, all[i-1].Seq)
		}
	}
	want := "old:phase_started(prepare) old:phase_completed(prepare) old:committed " +
		id[:3] + ":phase_started(prepare) " + id[:3] + ":phase_completed(prepare) " +
		id[:3] + ":phase_started(mutate) " + id[:3] + ":mutation_recorded " + id[:3] + ":phase_completed " + id[:3] + ":phase_started(next)"
	if got := strings.Join(labels, " "); got != want {
		t.Fatalf("log: got %s\nwant %s", got, want)
	}
	if all[0].Seq != 1 || all[1].Seq != 2 || all[2].Seq != 3 {
		t.Errorf("old events: got seqs %d %d %d, want 1 2 3 kept", all[0].Seq, all[1].Seq, all[2].Seq)
	}
	// The first write's four events are one row: numbered on from it.
	if all[4].Seq != all[3].Seq+1 || all[6].Seq != all[3].Seq+3 {
		t.Errorf("one write's events: got seqs %d..%d, want consecutive", all[3].Seq, all[6].Seq)
	}

	tail, err := s.LastLifecycleSeq(ctx)
	if err != nil || tail != all[len(all)-1].Seq {
		t.Errorf("tail: got %d (%v), want the last event's %d", tail, err, all[len(all)-1].Seq)
	}
	for i := range all {
		after := all[i].Seq
		got, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{AfterSeq: after})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(all)-i-1 || (len(got) > 0 && got[0].Seq != all[i+1].Seq) {
			t.Errorf("after %d: got %d events, want the %d after it", after, len(got), len(all)-i-1)
		}
	}
	// A page at a time, one event per page: every event once.
	var paged []int64
	for after := int64(0); ; {
		page, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{AfterSeq: after, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		paged, after = append(paged, page[0].Seq), page[0].Seq
	}
	if len(paged) != len(all) {
		t.Errorf("paged: got %v, want every one of %d events once", paged, len(all))
	}
	byRun, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: id, Type: ledger.EventPhaseStarted})
	if err != nil {
		t.Fatal(err)
	}
	if len(byRun) != 3 || byRun[0].Seq != all[3].Seq || byRun[1].Seq != all[5].Seq || byRun[2].Seq != all[8].Seq {
		t.Errorf("the run's phase_started events: got %+v, want the two in its first row and the one in its second", byRun)
	}
	limited, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{Type: ledger.EventPhaseCompleted, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(limited) != 2 || limited[0].Seq != all[1].Seq || limited[1].Seq != all[4].Seq {
		t.Errorf("two phase_completed events: got %+v, want the old run's and the run's first", limited)
	}
}

// oldSnapshot is a whole snapshot of run "older" in phase, as an older version wrote
// it in a row of its own.
func oldSnapshot(phase string) string {
	return `{"id":"older","workflow":"orders","version":1,"handler":"ship","kind":"consumer","phase":"` + phase +
		`","status":"active","attempt":1,"created_at":"1970-01-01T00:00:00.000000001Z","updated_at":"1970-01-01T00:00:00.000000001Z"}`
}

// TestCorruptPackedRowsNamed: a row of the log or of run_snapshots whose more column
// is not the JSON the store writes is an error naming the row, not events or
// snapshots silently left out.
func TestCorruptPackedRowsNamed(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{})
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var seq int64
	if err := c.QueryRow(ctx, `INSERT INTO lifecycle_events (run_id, type, data, at, more) VALUES ($1, 'paused', NULL, 1, 'not json') RETURNING seq`,
		r.ID).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: r.ID}); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("lifecycle log row %d: more", seq)) {
		t.Errorf("log: got %v, want an error naming row %d and its more column", err, seq)
	}
	if _, err := c.Exec(ctx, `UPDATE run_snapshots SET more = '[{"run":' WHERE run_id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Snapshots(ctx, r.ID); err == nil || !strings.Contains(err.Error(), "snapshots of run "+r.ID+" from 1: more") {
		t.Errorf("snapshots: got %v, want an error naming the run, its row and its more column", err)
	}
}
