package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/internal/benchrun"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

func TestMain(m *testing.M) { pgtest.Main(m, benchrun.RemoveWorkspaces) }

// BenchmarkHosts measures end-to-end consumer runs (prepare → durable mutation with a
// Files.write → next → commit) with 16 workflows per host running at once, so 16
// concurrent runs per host: one host on SQLite (the reference), and one and four
// hosts sharing one PostgreSQL ledger, each host with its own connection pool and
// leases, splitting the workflows between them.
func BenchmarkHosts(b *testing.B) {
	b.Run("sqlite/hosts=1", func(b *testing.B) {
		benchHosts(b, 1, func(b *testing.B) ledger.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return st
		})
	})
	for _, hosts := range []int{1, 4} {
		b.Run(fmt.Sprintf("postgres/hosts=%d", hosts), func(b *testing.B) {
			url := pgtest.URL(b)
			benchHosts(b, hosts, func(b *testing.B) ledger.Store {
				st, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 20})
				if err != nil {
					b.Fatal(err)
				}
				return st
			})
		})
	}
}

func benchHosts(b *testing.B, hosts int, open func(*testing.B) ledger.Store) {
	const perHost = 16
	ctx := context.Background()
	dir := benchrun.Workspace(b)
	var stores []ledger.Store
	var rts []*runtime.Runtime
	for h := range hosts {
		st := open(b)
		defer st.Close()
		reg := hostfuncs.NewRegistry()
		tools, err := workspace.Tools(dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := reg.Register(tools...); err != nil {
			b.Fatal(err)
		}
		rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Tools: reg,
			Lease: runtime.LeaseOptions{Owner: fmt.Sprintf("host-%d", h)}})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		stores, rts = append(stores, st), append(rts, rt)
	}
	var names []string
	for i := range perHost * hosts {
		name := fmt.Sprintf("w%d", i)
		names = append(names, name)
		if _, err := rts[0].LoadWorkflow(ctx, name, name+".js", benchrun.Source(benchrun.FileWrite)); err != nil {
			b.Fatal(err)
		}
	}
	// At least 10 events per workflow: one pass over the workflows claims each one's
	// lease, which on a slow disk would otherwise be most of what a short run times.
	// The rate is over the events actually run.
	events := max(b.N, 10*len(names))
	var evs []ledger.NewEvent
	for i := range events {
		evs = append(evs, ledger.NewEvent{Workflow: names[i%len(names)], Topic: "in",
			MessageID: fmt.Sprintf("e%d", i), Payload: json.RawMessage(`{}`)})
	}
	if _, err := stores[0].Publish(ctx, evs...); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, hosts)
	for h, rt := range rts {
		wg.Go(func() { errs[h] = rt.RunOnce(ctx, names) })
	}
	wg.Wait()
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "runs/s")
	pending, _ := stores[0].Events(ctx, ledger.EventFilter{Status: "pending"})
	if len(pending) != 0 {
		b.Fatalf("%d events left pending", len(pending))
	}
}
