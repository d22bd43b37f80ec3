// Package benchrun holds the end-to-end consumer-run benchmark body, shared by the
// runtime package's benchmark and the peer comparisons of the bench module, so that
// both measure the same work.
package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// Workflow is the benchmarked workflow: a consumer that peeks one event, writes one
// file as its durable mutation and records the event as its state.
const Workflow = `export default {
  topics: ['in'],
  consumers: { write: { subscribe: ['in'],
    async prepare() { const e = await Topics.peek({ topic: 'in', limit: 1 });
      return e.length ? { reservations: [{ topic: 'in', ids: [e[0].id] }], data: e[0].id } : null; },
    async mutate(id) { if (id) await Files.write({ path: 'out/' + id + '.txt', content: 'x' }); },
    next(id, r) { return { last: id }; } } },
};`

// ConsumerRuns publishes b.N events spread over workflows and runs them all on the
// embedded SQLite ledger (a real file, the in-flight write synchronous=FULL), timing
// only the runs. It reports runs/s; writes, commits, durable commits (those that waited
// for the disk) and reads per run; and the largest group-commit batch.
func ConsumerRuns(b *testing.B, workflows int) {
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
	counted := &CountingStore{Store: st}
	rt, err := runtime.New(runtime.Config{Store: counted, Engines: map[string]sandbox.Engine{"js": eng}, Tools: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	var names []string
	for i := range workflows {
		name := fmt.Sprintf("w%d", i)
		names = append(names, name)
		if _, err := rt.LoadWorkflow(ctx, name, name+".js", []byte(Workflow)); err != nil {
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
	counted.Reads.Store(0)
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
	b.ReportMetric(float64(ws.MaxBatch), "max-batch")
	b.ReportMetric(float64(counted.Reads.Load())/float64(b.N), "reads/run")
	pending, err := st.Events(ctx, ledger.EventFilter{Status: "pending"})
	if err != nil {
		b.Fatal(err)
	}
	if len(pending) != 0 {
		b.Fatalf("%d events left pending", len(pending))
	}
}
