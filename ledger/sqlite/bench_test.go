package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/ledger"
)

// benchStore opens a ledger on the real disk (WAL, synchronous=FULL) with n consumer
// runs already in phase mutating (readyRuns).
func benchStore(b testing.TB, n int, opts Options) (*Store, []string) {
	b.Helper()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, readyRuns(b, s, n)
}

// readyRuns inserts n consumer runs in phase mutating, in one transaction, and returns
// their ids.
func readyRuns(b testing.TB, s *Store, n int) []string {
	b.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		now := s.now()
		for i := range ids {
			ids[i] = s.opts.NewID()
			run := scripthost.Run{ID: ids[i], Workflow: "bench", Version: 1, Handler: "h",
				Kind: scripthost.KindConsumer, Phase: scripthost.RunMutating, Status: scripthost.StatusActive,
				Attempt: 1, CreatedAt: now, UpdatedAt: now}
			if err := s.InsertRun(ctx, tx, run); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ids
}

// mutate is one mutation's ledger work: the durable in-flight record (its key derived
// from the failures of its inputs, as the tool wrapper has it), then the outcome.
func mutate(ctx context.Context, s *Store, runID string) error {
	m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: runID, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{"order":1}`), InputHash: "ih-" + runID})
	if err != nil {
		return err
	}
	_, err = s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`))
	return err
}

func reportRate(b *testing.B) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "mutations/s")
	}
}

// floor is the plain-SQLite reference for n mutations made by workers at once.
func floor(workers int) func(b *testing.B) {
	return func(b *testing.B) {
		db, err := sql.Open("sqlite3", benchcmp.FloorDSN(filepath.Join(b.TempDir(), "floor.db")))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		benchcmp.TwoCommitFloor(b, db, workers)
	}
}

// BenchmarkMutation measures the durable in-flight write plus the apply per mutation,
// one run after the other and 16 runs at once, against two plain commits per mutation
// on one connection (the floor) in the same run.
func BenchmarkMutation(b *testing.B) {
	for _, workers := range []int{1, 16} {
		b.Run(fmt.Sprintf("runs=%d", workers), func(b *testing.B) {
			benchcmp.Against(b, "mutation", benchcmp.Case{Run: floor(workers)},
				benchcmp.Case{Run: func(b *testing.B) { benchMutations(b, Options{}, workers) }})
		})
	}
}

// BenchmarkMutationOneTxPerWrite is BenchmarkMutation without group commit.
func BenchmarkMutationOneTxPerWrite(b *testing.B) {
	for _, workers := range []int{1, 16} {
		b.Run(fmt.Sprintf("runs=%d", workers), func(b *testing.B) { benchMutations(b, Options{DisableGroupCommit: true}, workers) })
	}
}

// mutationRound is how many runs benchMutations makes ready at a time: each holds
// three rows in the writer's row cache (its run, its last snapshot, its mutation), and
// a round fits in one of the cache's generations (maxCachedRows/2), as the runs in
// progress of a host do.
const mutationRound = maxCachedRows / 8

// benchMutations times b.N mutations made by workers goroutines. Their runs are made
// ready in rounds of mutationRound, untimed, so that a mutation finds its run in the
// writer's row cache, as in a consumer run, where the transition that moved the run to
// mutating left it there; with all b.N runs inserted up front, each in-flight write
// read its run back from the database, work a real run does not do.
func benchMutations(b *testing.B, opts Options, workers int) {
	ctx := context.Background()
	s, _ := benchStore(b, 0, opts)
	before := s.WriteStats()
	var cpu time.Duration // the timed rounds' CPU time, without the untimed inserts
	b.ResetTimer()
	for done := 0; done < b.N; {
		b.StopTimer()
		ids := readyRuns(b, s, min(mutationRound, b.N-done))
		b.StartTimer()
		c0 := benchcmp.CPUTime()
		err := benchcmp.Parallel(workers, len(ids), func(i int) error { return mutate(ctx, s, ids[i]) })
		cpu += benchcmp.CPUTime() - c0
		if err != nil {
			b.Fatal(err)
		}
		done += len(ids)
	}
	b.StopTimer()
	benchcmp.ReportCPU(b, benchcmp.CPUTime()-cpu, "op")
	reportRate(b)
	reportBatches(b, s, before)
}

// reportBatches reports how writes shared commits since before: writes per commit,
// the largest batch, the share of commits that had to reach the disk, and the fsyncs of
// the WAL per commit (several durable commits share one).
func reportBatches(b *testing.B, s *Store, before WriteStats) {
	st := s.WriteStats()
	writes, commits, durable := st.Writes-before.Writes, st.Commits-before.Commits, st.Durable-before.Durable
	if commits > 0 {
		b.ReportMetric(float64(writes)/float64(commits), "writes/commit")
		b.ReportMetric(float64(durable)/float64(commits), "durable/commit")
		b.ReportMetric(float64(st.MaxBatch), "max-batch")
		b.ReportMetric(float64(st.Syncs-before.Syncs)/float64(commits), "fsyncs/commit")
	}
}

// BenchmarkConsumerRun measures the ledger's part of a whole consumer run with one
// event and one mutation (publish; the in-flight record creating the run with the event
// reserved; the outcome; the commit: consumerRun), one run after the other, against the
// two-commit floor.
func BenchmarkConsumerRun(b *testing.B) {
	subject := func(b *testing.B) {
		ctx := context.Background()
		s, _ := benchStore(b, 0, Options{})
		cpu := benchcmp.CPUTime()
		b.ResetTimer()
		for i := range b.N {
			if err := consumerRun(ctx, s, fmt.Sprint(i)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		benchcmp.ReportCPU(b, cpu, "op")
		if sec := b.Elapsed().Seconds(); sec > 0 {
			b.ReportMetric(float64(b.N)/sec, "runs/s")
		}
	}
	benchcmp.Against(b, "run", benchcmp.Case{Run: floor(1)}, benchcmp.Case{Run: subject})
}

// consumerRun makes the ledger writes of one consumer run as the runtime makes them:
// the event published; the mutation's in-flight record, which creates the run prepared
// and moved on to mutating with the event reserved (ledger.NewMutation.Run); the
// outcome, which moves the run on to emitting; the commit. (Seven writes after the
// publish, each transition a commit of its own, until the runtime folded them.)
func consumerRun(ctx context.Context, s *Store, n string) error {
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "bench", Topic: "in", MessageID: n, Payload: json.RawMessage(`{}`)}); err != nil {
		return err
	}
	id := s.NewID()
	m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: id, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{"order":1}`), InputHash: "ih-" + id,
		Run: &ledger.NewRun{ID: id, Workflow: "bench", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
			Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Mutate: true,
				Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{n}}}}}})
	if err != nil {
		return err
	}
	if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`)); err != nil {
		return err
	}
	_, err = s.CommitConsumer(ctx, id, ledger.Commit{State: json.RawMessage(`{}`)})
	return err
}
