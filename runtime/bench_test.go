package runtime_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

const benchWorkflow = `export default {
  topics: ['in'],
  consumers: { write: { subscribe: ['in'],
    async prepare() { const e = await Topics.peek({ topic: 'in', limit: 1 });
      return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
    async mutate(id) { if (id) await Files.write({ path: 'out/' + id + '.txt', content: 'x' }); },
    next(id, r) { return { last: id }; } } },
};`

// BenchmarkConsumerRun measures whole consumer runs (prepare → durable mutation with a
// Files.write → next → commit) on a real SQLite file: one workflow, and 16 workflows
// running at once, each against the two-commit floor of plain SQLite with as many
// writers, in the same run.
func BenchmarkConsumerRun(b *testing.B) {
	for _, workflows := range []int{1, 16} {
		b.Run(fmt.Sprintf("workflows=%d", workflows), func(b *testing.B) {
			ref := func(b *testing.B) {
				db, err := sql.Open("sqlite3", benchcmp.FloorDSN(filepath.Join(b.TempDir(), "floor.db")))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				benchcmp.TwoCommitFloor(b, db, workflows)
			}
			benchcmp.Against(b, "run", benchcmp.Case{Run: ref}, benchcmp.Case{Run: func(b *testing.B) { consumerRuns(b, workflows) }})
		})
	}
}

// consumerRuns publishes b.N events spread over workflows and runs them all.
func consumerRuns(b *testing.B, workflows int) {
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	reg := hostfuncs.NewRegistry()
	tools, err := workspace.Tools(dir)
	if err != nil {
		b.Fatal(err)
	}
	if err := reg.Register(tools...); err != nil {
		b.Fatal(err)
	}
	eng := js.New(js.Options{})
	counted := &countingStore{Store: st}
	rt, err := runtime.New(runtime.Config{Store: counted, Engines: map[string]sandbox.Engine{"js": eng}, Tools: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	var names []string
	for i := range workflows {
		name := fmt.Sprintf("w%d", i)
		names = append(names, name)
		if _, err := rt.LoadWorkflow(ctx, name, name+".js", []byte(benchWorkflow)); err != nil {
			b.Fatal(err)
		}
	}
	var evs []ledger.NewEvent
	for i := range b.N {
		evs = append(evs, ledger.NewEvent{Workflow: names[i%workflows], Topic: "in",
			MessageID: fmt.Sprintf("e%d", i), Payload: json.RawMessage(`{}`)})
	}
	if _, err := st.Publish(ctx, evs...); err != nil {
		b.Fatal(err)
	}
	before := st.WriteStats()
	counted.reads.Store(0)
	b.ResetTimer()
	start := time.Now()
	if err := rt.RunOnce(ctx, names); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	ws := st.WriteStats()
	b.ReportMetric(float64(ws.Writes-before.Writes)/float64(b.N), "writes/run")
	b.ReportMetric(float64(ws.Commits-before.Commits)/float64(b.N), "commits/run")
	b.ReportMetric(float64(ws.Durable-before.Durable)/float64(b.N), "durable/run")
	b.ReportMetric(float64(counted.reads.Load())/float64(b.N), "reads/run")
	pending, _ := st.Events(ctx, ledger.EventFilter{Status: "pending"})
	if len(pending) != 0 {
		b.Fatalf("%d events left pending", len(pending))
	}
}
