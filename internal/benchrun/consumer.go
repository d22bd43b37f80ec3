// Package benchrun holds the end-to-end consumer-run benchmark body, shared by the
// runtime package's benchmark and the peer comparisons of the bench module, so that
// both measure the same work.
package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
)

// workflow is the benchmarked workflow: a consumer that peeks one event, makes one
// durable mutation and records the event as its state. EFFECT stands for the
// mutation's tool call (see Source).
const workflow = `export default {
  topics: ['in'],
  consumers: { write: { subscribe: ['in'],
    async prepare() { const e = await Topics.peek({ topic: 'in', limit: 1 });
      return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
    async mutate(id) { if (id) await EFFECT; },
    next(id, r) { return { last: id }; } } },
};`

// Effect is what a benchmarked run's mutation does outside the ledger.
type Effect int

const (
	// FileWrite writes one new file with the workspace's Files.write: a file created,
	// written and fsynced, then renamed into place. The run pays for that external
	// work too.
	FileWrite Effect = iota
	// Count calls a mutating Go tool that only adds one to a counter: the run's cost
	// is the host's alone (the sandbox, the ledger, the scheduling), as when a peer's
	// step does no I/O of its own.
	Count
)

// call is the effect's tool call in the workflow's mutate phase.
func (e Effect) call() string {
	if e == Count {
		return "Counter.add({ id })"
	}
	return "Files.write({ path: 'out/' + id + '.txt', content: 'x' })"
}

// Source is the benchmarked workflow with the effect as its mutation.
func Source(e Effect) []byte { return []byte(strings.Replace(workflow, "EFFECT", e.call(), 1)) }

// CounterTool is the Count effect's tool: a mutation with no I/O, adding one to n.
func CounterTool(n *atomic.Int64) *hostfuncs.Tool {
	return &hostfuncs.Tool{Namespace: "Counter", Method: "add", Description: "adds one to a counter",
		Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(n.Add(1))
		}}
}

// ConsumerRuns publishes b.N events spread over workflows and runs them all on the
// embedded SQLite ledger (a real file, the in-flight write synchronous=FULL), timing
// only the runs. Each run's mutation makes the effect. It reports runs/s; writes,
// commits, durable commits (those that waited for the disk) and reads per run; and the
// largest group-commit batch.
func ConsumerRuns(b *testing.B, workflows int, effect Effect) {
	ConsumerRunsOn(b, workflows, effect, Ledger{})
}

// Ledger is the ledger a benchmark's runs are recorded in: the zero value is an SQLite
// file of the benchmark's own.
type Ledger struct {
	// PostgresURL, when set, names the PostgreSQL database (empty, of the
	// benchmark's own) the runs are recorded in instead.
	PostgresURL string
}

// ConsumerRunsOn is ConsumerRuns on the given ledger. On PostgreSQL it first makes
// WarmRuns untimed runs, reported as cold-runs/s, and reports, in place of the SQLite
// writer's counts, what the server counted for the timed runs (see
// pgtest.Counts.Report): statements, transactions, write-ahead log and server CPU per
// run, lock waits.
func ConsumerRunsOn(b *testing.B, workflows int, effect Effect, on Ledger) {
	ctx := context.Background()
	dir := b.TempDir()
	files := dir // the workspace: kept until the process ends where runs write files
	if effect == FileWrite {
		files = Workspace(b)
	}
	// The writer's busy time: how long its transactions took, from their start to the
	// end of their commit (the durable writes' fsync of the WAL comes after, outside the
	// writer). Near the wall time, the one writer is what bounds the runs.
	var busy atomic.Int64
	var st ledger.Store
	var lite *sqlite.Store
	if on.PostgresURL != "" {
		pg, err := postgres.Open(ctx, on.PostgresURL, postgres.Options{MaxConns: workflows + 4})
		if err != nil {
			b.Fatal(err)
		}
		st = pg
	} else {
		var err error
		lite, err = sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), sqlite.Options{
			OnCommit: func(_ int, took time.Duration) { busy.Add(int64(took)) }})
		if err != nil {
			b.Fatal(err)
		}
		st = lite
	}
	defer st.Close()
	reg := hostfuncs.NewRegistry()
	tools, err := workspace.Tools(files)
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Register(tools...); err != nil {
		b.Fatal(err)
	}
	var counted atomic.Int64
	if err := reg.Register(CounterTool(&counted)); err != nil {
		b.Fatal(err)
	}
	engines := host.NewEngines(host.EngineOptions{})
	defer engines.Close(ctx)
	eng, err := engines.For(ctx, "js")
	if err != nil {
		b.Fatal(err)
	}
	store := &CountingStore{Store: st}
	rt, err := runtime.New(runtime.Config{Store: store, Engines: eng, Tools: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	var names []string
	for i := range workflows {
		name := fmt.Sprintf("w%d", i)
		names = append(names, name)
		if _, err := rt.LoadWorkflow(ctx, name, name+".js", Source(effect)); err != nil {
			b.Fatal(err)
		}
	}
	publish := func(prefix string, n int) {
		if _, err := st.Publish(ctx, Events(names, prefix, n)...); err != nil {
			b.Fatal(err)
		}
	}
	warm, cold := 0, 0.0 // the untimed runs and their rate, reported after the timer's reset
	if on.PostgresURL != "" {
		warm = WarmRuns(workflows)
		publish("warm", warm)
		start := time.Now()
		if err := rt.RunOnce(ctx, names); err != nil {
			b.Fatal(err)
		}
		cold = float64(warm) / time.Since(start).Seconds()
	}
	publish("e", b.N)
	var before sqlite.WriteStats
	if lite != nil {
		before = lite.WriteStats()
	}
	var meter *pgtest.Meter
	if on.PostgresURL != "" {
		meter = pgtest.StartMeter(b, on.PostgresURL)
	}
	store.Reads.Store(0)
	b.ResetTimer()
	busy.Store(0)
	cpu0 := benchcmp.CPUTime()
	start := time.Now()
	if err := rt.RunOnce(ctx, names); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	wall := time.Since(start)
	b.ReportMetric(float64(b.N)/wall.Seconds(), "runs/s")
	if cold > 0 {
		b.ReportMetric(cold, "cold-runs/s")
	}
	benchcmp.ReportCPU(b, cpu0, "run")
	if meter != nil {
		meter.Stop(b).Report(b, b.N, "run")
	}
	if lite != nil {
		b.ReportMetric(100*float64(busy.Load())/float64(wall), "writer-busy-%")
		ws := lite.WriteStats()
		b.ReportMetric(float64(ws.Writes-before.Writes)/float64(b.N), "writes/run")
		b.ReportMetric(float64(ws.Commits-before.Commits)/float64(b.N), "commits/run")
		b.ReportMetric(float64(ws.Durable-before.Durable)/float64(b.N), "durable/run")
		b.ReportMetric(float64(ws.Syncs-before.Syncs)/float64(b.N), "fsyncs/run")
		b.ReportMetric(float64(ws.MaxBatch), "max-batch")
		b.ReportMetric(float64(ws.Statements-before.Statements)/float64(b.N), "statements/run")
	}
	b.ReportMetric(float64(store.Reads.Load())/float64(b.N), "reads/run")
	CheckRuns(b, st, warm+b.N)
	if effect == Count && counted.Load() != int64(warm+b.N) {
		b.Fatalf("%d mutations made for %d runs", counted.Load(), b.N)
	}
	if effect == FileWrite {
		fileSystemAlone(b, files, workflows)
	}
}

// Events are n events of the benchmarked workflow's topic, spread over the workflows
// in turn, their message ids prefix followed by their number.
func Events(workflows []string, prefix string, n int) []ledger.NewEvent {
	evs := make([]ledger.NewEvent, 0, n)
	for i := range n {
		evs = append(evs, ledger.NewEvent{Workflow: workflows[i%len(workflows)], Topic: "in",
			MessageID: fmt.Sprintf("%s%d", prefix, i), Payload: json.RawMessage(`{}`)})
	}
	return evs
}

// WarmRuns is how many runs a PostgreSQL benchmark of workflows workflows at once
// makes before it starts timing, and its peer the same: enough for every connection of
// the pool to have been opened and to have prepared and planned the statements of a
// run, as in a host that has been running. Their rate is reported as cold-runs/s.
func WarmRuns(workflows int) int { return max(64, 16*workflows) }

// fsSample is how many files fileSystemAlone writes at most.
const fsSample = 2000

// fileSystemAlone measures the file system's own share of the FileWrite effect, right
// after the runs and beside their files: the same Files.write (a new file created,
// written, fsynced and renamed into place) called directly, by as many writers as
// there were workflows, with no sandbox and no ledger. It reports fs-files/s and the
// CPU each file took (fs-cpu-µs/file, the kernel's included): a run that writes a
// file goes no faster than the file system writes it, and what the file system
// allows changes with what was removed beside the directory lately (see Workspace).
func fileSystemAlone(b *testing.B, dir string, writers int) {
	ws, err := workspace.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	n := min(b.N, fsSample)
	cpu0 := benchcmp.CPUTime()
	start := time.Now()
	err = benchcmp.Parallel(writers, n, func(i int) error {
		return ws.Write("bench", fmt.Sprintf("out/fs-%d.txt", i), []byte("x"))
	})
	wall, cpu := time.Since(start), benchcmp.CPUTime()-cpu0
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/wall.Seconds(), "fs-files/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "fs-cpu-µs/file")
}
