package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// TestSnapshotsLoggedAsChanges makes a consumer run with a large input state and
// checks its lifecycle log: the first snapshot holds the whole run, each later one
// only what changed, so the state is in the log once instead of at every step; and
// Snapshots reads every one back whole, the last the run as stored.
func TestSnapshotsLoggedAsChanges(t *testing.T) {
	ctx := context.Background()
	s, path := tempStore(t)
	blob := strings.Repeat("s", 10_000)
	state := json.RawMessage(`{"blob":"` + blob + `"}`)
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "in", MessageID: "e1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		InputState: state, Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true,
		Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"e1"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := mutate(ctx, s, r.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitConsumer(ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}

	db, err := sql.Open("sqlite3", path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT data FROM lifecycle_events WHERE run_id = ? AND type = 'snapshot' ORDER BY seq`, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var logged [][]byte
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		logged = append(logged, d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	holding := 0
	for i, d := range logged {
		if bytes.Contains(d, []byte(blob)) {
			holding++
		}
		if change := bytes.HasPrefix(d, []byte(`{"~":`)); change != (i > 0) {
			t.Errorf("logged snapshot %d is a change: %v, want %v", i+1, change, i > 0)
		}
	}
	if len(logged) < 6 || holding != 1 {
		t.Errorf("%d snapshots logged, %d of them holding the input state; want 6 or more, 1", len(logged), holding)
	}

	snaps, err := s.Snapshots(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantPhases := []scripthost.RunPhase{scripthost.RunPending, scripthost.RunPreparing, scripthost.RunPrepared,
		scripthost.RunMutating, scripthost.RunMutated, scripthost.RunEmitting, scripthost.RunCommitted}
	if len(snaps) != len(wantPhases) {
		t.Fatalf("got %d snapshots, want %d", len(snaps), len(wantPhases))
	}
	for i, sn := range snaps {
		var got scripthost.Run
		if err := json.Unmarshal(sn.Run, &got); err != nil {
			t.Fatal(err)
		}
		if sn.Phase != wantPhases[i] || got.Phase != wantPhases[i] || string(got.InputState) != string(state) || got.Workflow != "wf" {
			t.Errorf("snapshot %d: phase %s (run %s), input state of %d bytes, workflow %q; want %s, %d bytes, wf",
				i+1, sn.Phase, got.Phase, len(got.InputState), got.Workflow, wantPhases[i], len(state))
		}
	}
	final, err := s.Run(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(final); !bytes.Equal(snaps[len(snaps)-1].Run, want) {
		t.Errorf("last snapshot\n%s\nwant the run as stored\n%s", snaps[len(snaps)-1].Run, want)
	}
}

// TestSnapshotLogWithoutBase: a run whose log starts with a change, which no store
// writes, is reported with the snapshot and the run, and nothing is read as a run.
func TestSnapshotLogWithoutBase(t *testing.T) {
	ctx := context.Background()
	s, path := tempStore(t)
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`INSERT INTO runs (id, workflow, version, handler, kind, phase, status, attempt, created_at, updated_at)
		SELECT 'r-bad', workflow, version, handler, kind, phase, status, attempt, created_at, updated_at FROM runs WHERE id = '` + r.ID + `'`,
		`INSERT INTO lifecycle_events (run_id, type, mutation_id, data, at) VALUES ('r-bad', 'snapshot', '', '{"~":[],"phase":"preparing"}', 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Snapshots(ctx, "r-bad")
	if err == nil || !strings.Contains(err.Error(), "snapshot 1 of run r-bad: a change with no snapshot before it") {
		t.Fatalf("got %v, want snapshot 1 of run r-bad: a change with no snapshot before it", err)
	}
}

// TestSnapshotsAcrossReopen moves a run, reopens the store (whose row cache starts
// empty, as after a restart or an upgrade) and moves it on: the first snapshot after
// the reopen is logged whole, the one after it as a change, and all read back whole.
func TestSnapshotsAcrossReopen(t *testing.T) {
	ctx := context.Background()
	s, path := tempStore(t)
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"n":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, path)
	if _, err := s.AdvancePhase(ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var changes []bool
	rows, err := db.QueryContext(ctx, `SELECT substr(data, 1, 5) = '{"~":' FROM lifecycle_events WHERE run_id = ? AND type = 'snapshot' ORDER BY seq`, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c bool
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, c)
	}
	if want := []bool{false, false, true}; !slices.Equal(changes, want) {
		t.Errorf("snapshots logged as changes: %v, want %v (whole, whole after the reopen, then a change)", changes, want)
	}
	snaps, err := s.Snapshots(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	final, err := s.Run(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(final)
	if len(snaps) != 3 || snaps[2].Phase != scripthost.RunPrepared || !bytes.Equal(snaps[2].Run, want) {
		t.Fatalf("got %d snapshots, the last %s\n%s\nwant 3, the last the run as stored\n%s", len(snaps), snaps[len(snaps)-1].Phase, snaps[len(snaps)-1].Run, want)
	}
}
