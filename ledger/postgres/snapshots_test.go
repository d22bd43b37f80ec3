package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/internal/sqlstore"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// history is what a run's snapshots must read back as: the JSON of each state its
// transitions left, in order, as a snapshot holding the whole run had it.
type history struct {
	t    *testing.T
	want [][]byte
}

// add records the states of one transition that returned r: first r in each phase of
// via (the states it passed through, which differ from r only in their phase), then r.
func (h *history) add(r scripthost.Run, via ...scripthost.RunPhase) {
	h.t.Helper()
	for _, p := range via {
		v := r
		v.Phase = p
		h.add(v)
	}
	b, err := json.Marshal(r)
	if err != nil {
		h.t.Fatal(err)
	}
	h.want = append(h.want, b)
}

// check reads the run's snapshots through s and compares each with the state recorded.
func (h *history) check(ctx context.Context, s ledger.Store, runID string) {
	h.t.Helper()
	snaps, err := s.Snapshots(ctx, runID)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(snaps) != len(h.want) {
		h.t.Fatalf("got %d snapshots, want %d", len(snaps), len(h.want))
	}
	for i, sn := range snaps {
		var r scripthost.Run
		_ = json.Unmarshal(h.want[i], &r)
		if sn.Seq != i+1 || sn.Phase != r.Phase || sn.Status != r.Status || !bytes.Equal(sn.Run, h.want[i]) {
			h.t.Errorf("snapshot %d: seq %d %s/%s\n%s\nwant seq %d %s/%s\n%s", i+1, sn.Seq, sn.Phase, sn.Status, sn.Run, i+1, r.Phase, r.Status, h.want[i])
		}
	}
}

// storedSnapshots returns the run column of the run's rows in run_snapshots, in order,
// as the database holds them.
func storedSnapshots(t *testing.T, url, runID string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT run, more FROM run_snapshots WHERE run_id = $1 ORDER BY seq`, runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var run string
		var more *string
		if err := rows.Scan(&run, &more); err != nil {
			t.Fatal(err)
		}
		out = append(out, run)
		if more == nil {
			continue
		}
		var packed []struct {
			Run json.RawMessage `json:"run"`
		}
		if err := json.Unmarshal([]byte(*more), &packed); err != nil {
			t.Fatal(err)
		}
		for _, p := range packed {
			out = append(out, string(p.Run))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// forms says of each stored snapshot whether it is whole (w) or a change (c).
func forms(stored []string) string {
	var sb strings.Builder
	for _, s := range stored {
		switch {
		case strings.HasPrefix(s, `{"id"`):
			sb.WriteByte('w')
		case strings.HasPrefix(s, `{"~":[`):
			sb.WriteByte('c')
		default:
			sb.WriteByte('?')
		}
	}
	return sb.String()
}

// verifying has the stores opened after it check each cached snapshot against the
// stored ones before logging a change from it, as make test has them do.
func verifying(t *testing.T) { t.Setenv(sqlstore.VerifyRowCacheEnv, "1") }

// TestSnapshotsStoredAsChanges moves a consumer run with a large input state through
// every phase: run_snapshots holds its first snapshot whole and each later one as what
// changed, so the state is stored once instead of at every step, and Snapshots reads
// each back byte for byte as the JSON of the state it was taken of.
func TestSnapshotsStoredAsChanges(t *testing.T) {
	verifying(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{})
	h := &history{t: t}
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
	h.add(r, scripthost.RunPending)
	if r, err = s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true, Data: json.RawMessage(`{"order":7}`),
		Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"e1"}}}}); err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunPrepared)
	m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{"order":7}`), InputHash: "ih"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if r, err = s.Run(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunMutated)
	if r, err = s.CommitConsumer(ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	h.add(r)

	stored := storedSnapshots(t, url, r.ID)
	if got := forms(stored); got != "wcccccc" {
		t.Errorf("stored snapshots: %s, want wcccccc (the first whole, each later one a change)", got)
	}
	holding := 0
	for _, st := range stored {
		if strings.Contains(st, blob) {
			holding++
		}
	}
	if holding != 1 {
		t.Errorf("%d stored snapshots hold the input state, want 1", holding)
	}
	h.check(ctx, s, r.ID)
	if final, _ := json.Marshal(must(s.Run(ctx, r.ID))(t)); !bytes.Equal(h.want[len(h.want)-1], final) {
		t.Errorf("last snapshot\n%s\nwant the run as stored\n%s", h.want[len(h.want)-1], final)
	}
}

func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestSnapshotsTwoHostsAlternate: two hosts (two stores on one database) move one run
// in turn, each keeping its own last snapshot of the run, which the other's move makes
// out of date. Every snapshot reads back as the state it was taken of: a host whose
// cached run changed runs its transition again without its cache, and stores the
// snapshot whole.
func TestSnapshotsTwoHostsAlternate(t *testing.T) {
	verifying(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	var ra, rb retries
	a := open(t, url, postgres.Options{OnRetry: ra.add})
	b := open(t, url, postgres.Options{OnRetry: rb.add})
	h := &history{t: t}
	r, err := a.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"n":1}`), Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunPending)
	steps := []struct {
		host *postgres.Store
		move func(s *postgres.Store) (scripthost.Run, error)
		via  []scripthost.RunPhase
	}{
		{b, func(s *postgres.Store) (scripthost.Run, error) {
			return s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Data: json.RawMessage(`{"p":1}`)})
		}, nil},
		{a, func(s *postgres.Store) (scripthost.Run, error) {
			return s.AdvancePhase(ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating)
		}, nil},
		{b, func(s *postgres.Store) (scripthost.Run, error) {
			return s.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusPausedTransient, Error: "later"})
		}, nil},
		{a, func(s *postgres.Store) (scripthost.Run, error) {
			return s.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusActive})
		}, nil},
		{a, func(s *postgres.Store) (scripthost.Run, error) { return s.MarkMutated(ctx, r.ID) },
			[]scripthost.RunPhase{scripthost.RunMutated}},
		{b, func(s *postgres.Store) (scripthost.Run, error) {
			return s.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusPausedApproval})
		}, nil},
		{a, func(s *postgres.Store) (scripthost.Run, error) {
			return s.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusActive})
		}, nil},
		{b, func(s *postgres.Store) (scripthost.Run, error) {
			return s.CommitConsumer(ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":2}`)})
		}, nil},
	}
	for i, st := range steps {
		got, err := st.move(st.host)
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		h.add(got, st.via...)
	}
	h.check(ctx, a, r.ID)
	h.check(ctx, b, r.ID)
	if ra.get("stale_row") == 0 || rb.get("stale_row") == 0 {
		t.Errorf("stale_row retries: host a %d, host b %d; want each host to have found its cached run out of date",
			ra.get("stale_row"), rb.get("stale_row"))
	}
	if got := forms(storedSnapshots(t, url, r.ID)); !strings.HasPrefix(got, "wc") || strings.Contains(got, "?") {
		t.Errorf("stored snapshots: %s, want the creation's whole then a change", got)
	}
}

// TestSnapshotsStaleBaseSameVersion: another host moves a run and moves it back to a
// version (phase, status, updated_at) that the first host's cached run still has, here
// with both hosts' clocks stopped at one instant, so that the guard of the first
// host's next update matches though the run changed (a pause after the mutation
// marked it to retry from emitting). The snapshot it would store as a change from its
// cached one, numbered one past it, is refused by the primary key, and the transition
// runs again without the cache: every snapshot reads back as the state it was taken
// of, and the run keeps what the other host changed.
func TestSnapshotsStaleBaseSameVersion(t *testing.T) {
	verifying(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	now := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC)
	clock := func() time.Time { return now }
	var ra retries
	a := open(t, url, postgres.Options{Clock: clock, OnRetry: ra.add})
	b := open(t, url, postgres.Options{Clock: clock})
	h := &history{t: t}
	r, err := a.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"n":1}`), Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunPending)
	if r, err = a.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Mutate: true}); err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunPrepared)
	if r, err = a.MarkMutated(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunMutated)
	cached := r
	for _, st := range []scripthost.RunStatus{scripthost.StatusPausedTransient, scripthost.StatusActive} {
		got, err := b.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: st})
		if err != nil {
			t.Fatal(err)
		}
		h.add(got)
		r = got
	}
	if r.Phase != cached.Phase || r.Status != cached.Status || !r.UpdatedAt.Equal(cached.UpdatedAt) || !r.RetryFromEmitting || cached.RetryFromEmitting {
		t.Fatalf("the other host left %s/%s at %v retry from emitting %v; want the cached version %s/%s at %v, changed",
			r.Phase, r.Status, r.UpdatedAt, r.RetryFromEmitting, cached.Phase, cached.Status, cached.UpdatedAt)
	}
	if r, err = a.CommitConsumer(ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	h.add(r)
	h.check(ctx, a, r.ID)
	if !r.RetryFromEmitting {
		t.Error("the commit wrote over what the other host changed (retry from emitting)")
	}
	if n := ra.get("stale_row"); n != 1 {
		t.Errorf("got %d stale_row retries, want 1 (the change refused by its number)", n)
	}
}

// TestSnapshotsAfterStaleRetry: a transition refused after its transaction ran again
// (the run paused by another host meanwhile), then made once the other host resumed
// the run, and the run's later transitions: every snapshot reads back as the state it
// was taken of.
func TestSnapshotsAfterStaleRetry(t *testing.T) {
	verifying(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	var ra retries
	a := open(t, url, postgres.Options{OnRetry: ra.add})
	b := open(t, url, postgres.Options{})
	h := &history{t: t}
	r, err := a.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"n":1}`), Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunPending)
	for _, st := range []scripthost.RunStatus{scripthost.StatusPausedTransient, scripthost.StatusActive} {
		if st == scripthost.StatusActive {
			if _, err := a.MarkPrepared(ctx, r.ID, ledger.PrepareResult{}); !errors.Is(err, ledger.ErrIllegalTransition) {
				t.Fatalf("preparing a run another host paused: got %v, want a refused transition", err)
			}
		}
		got, err := b.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: st})
		if err != nil {
			t.Fatal(err)
		}
		h.add(got)
	}
	if r, err = a.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Data: json.RawMessage(`{"p":1}`)}); err != nil {
		t.Fatal(err)
	}
	h.add(r)
	if r, err = a.AdvancePhase(ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating); err != nil {
		t.Fatal(err)
	}
	h.add(r)
	if r, err = a.MarkMutated(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	h.add(r, scripthost.RunMutated)
	if r, err = a.CommitConsumer(ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":2}`)}); err != nil {
		t.Fatal(err)
	}
	h.add(r)
	h.check(ctx, b, r.ID)
	if n := ra.get("stale_row"); n != 1 {
		t.Errorf("got %d stale_row retries, want 1 (the refused transition)", n)
	}
	if got := forms(storedSnapshots(t, url, r.ID)); !strings.HasPrefix(got, "wc") || strings.Contains(got, "?") {
		t.Errorf("stored snapshots: %s, want the creation's whole then a change", got)
	}
}

// TestSnapshotsVerifyCachedBase: with the row cache checked (SCRIPTHOST_VERIFY_ROW_CACHE,
// as make test runs), a cached snapshot that is not the one stored under its number is
// reported before a change from it is stored. Stored snapshots never change; here one
// is changed behind the store's back.
func TestSnapshotsVerifyCachedBase(t *testing.T) {
	verifying(t)
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{})
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{"n":1}`), Start: scripthost.RunPreparing})
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// The creation's two snapshots share a row: the second is the first of its more.
	if _, err := c.Exec(ctx, `UPDATE run_snapshots SET more = '[{"run":{"~":[],"handler":"other"},"at":1}]' WHERE run_id = $1 AND seq = 1`, r.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{})
	if !errors.Is(err, sqlstore.ErrSnapshotCacheWrong) || !strings.Contains(err.Error(), `"handler":"other"`) {
		t.Fatalf("got %v, want the cached snapshot reported out of date, with the stored one", err)
	}
	if got := forms(storedSnapshots(t, url, r.ID)); got != "wc" {
		t.Errorf("stored snapshots after the refusal: %s, want wc (nothing stored)", got)
	}
}
