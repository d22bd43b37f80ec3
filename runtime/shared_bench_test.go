package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/benchcmp"
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

// BenchmarkHosts measures end-to-end consumer runs (prepare → durable mutation of a
// Go tool without I/O → next → commit) with 16 workflows per host running at once, so
// 16 concurrent runs per host: one host on SQLite (the reference), and one, two and
// four hosts sharing one PostgreSQL ledger, each host with its own connection pool and
// leases, splitting the workflows between them. On PostgreSQL it reports what the
// server counted (statements, write transactions and server CPU per run, lock waits,
// row lock waits, deadlocks, serialisation failures: pgtest.Meter), the hosts'
// transactions run again by reason, and the hosts' CPU per run, all of the timed runs,
// which follow 10 untimed runs per workflow (their rate is cold-runs/s); and it checks
// that each event was run once (benchrun.CheckRuns). postgres/hosts=1,at-once=64 is one host with
// the workflows, runs at once (Concurrency) and connections of four;
// postgres/hosts=4,at-once=16 four hosts with those of one between them.
func BenchmarkHosts(b *testing.B) {
	b.Run("sqlite/hosts=1", func(b *testing.B) {
		benchHosts(b, 1, "", func(b *testing.B, _ func(string)) ledger.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return st
		})
	})
	for _, hosts := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("postgres/hosts=%d", hosts), func(b *testing.B) {
			benchPostgresHosts(b, hosts, 16)
		})
	}
	// What more hosts cost apart from what more runs at once cost: one host with the
	// workflows, runs at once and connections of four hosts, and four hosts sharing
	// the workflows, runs at once and connections of one.
	b.Run("postgres/hosts=1,at-once=64", func(b *testing.B) { benchPostgresHosts(b, 1, 64) })
	b.Run("postgres/hosts=4,at-once=16", func(b *testing.B) { benchPostgresHosts(b, 4, 4) })
}

// benchPostgresHosts runs benchHosts on a PostgreSQL ledger, each host with perHost
// workflows and as many runs at once (Concurrency), and perHost·5/4 connections.
func benchPostgresHosts(b *testing.B, hosts, perHost int) {
	url := pgtest.URL(b)
	benchHostsOf(b, hosts, perHost, url, func(b *testing.B, onRetry func(string)) ledger.Store {
		st, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: perHost * 5 / 4, OnRetry: onRetry})
		if err != nil {
			b.Fatal(err)
		}
		return st
	})
}

func benchHosts(b *testing.B, hosts int, pgURL string, open func(*testing.B, func(string)) ledger.Store) {
	benchHostsOf(b, hosts, 16, pgURL, open)
}

func benchHostsOf(b *testing.B, hosts, perHost int, pgURL string, open func(*testing.B, func(string)) ledger.Store) {
	ctx := context.Background()
	var mu sync.Mutex
	retries := map[string]int{}
	onRetry := func(reason string) {
		mu.Lock()
		defer mu.Unlock()
		retries[reason]++
	}
	var counted atomic.Int64
	var stores []ledger.Store
	var rts []*runtime.Runtime
	for h := range hosts {
		st := open(b, onRetry)
		defer st.Close()
		reg := hostfuncs.NewRegistry()
		if err := reg.Register(benchrun.CounterTool(&counted)); err != nil {
			b.Fatal(err)
		}
		rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Tools: reg,
			Concurrency: perHost, Lease: runtime.LeaseOptions{Owner: fmt.Sprintf("host-%d", h)}})
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
		if _, err := rts[0].LoadWorkflow(ctx, name, name+".js", benchrun.Source(benchrun.Count)); err != nil {
			b.Fatal(err)
		}
	}
	publish := func(prefix string, n int) {
		if _, err := stores[0].Publish(ctx, benchrun.Events(names, prefix, n)...); err != nil {
			b.Fatal(err)
		}
	}
	runAll := func() error {
		var wg sync.WaitGroup
		errs := make([]error, hosts)
		for h, rt := range rts {
			wg.Go(func() { errs[h] = rt.RunOnce(ctx, names) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	// Untimed runs first, 10 per workflow: every host's pool has opened its
	// connections and prepared and planned a run's statements, as in hosts that have
	// been running. Their rate is cold-runs/s.
	warm := 10 * len(names)
	publish("warm", warm)
	coldStart := time.Now()
	if err := runAll(); err != nil {
		b.Fatal(err)
	}
	cold := float64(warm) / time.Since(coldStart).Seconds()
	// At least 10 events per workflow: one pass over the workflows claims each one's
	// lease, which on a slow disk would otherwise be most of what a short run times.
	// The rate is over the events actually run.
	events := max(b.N, 10*len(names))
	publish("e", events)
	var meter *pgtest.Meter
	if pgURL != "" {
		meter = pgtest.StartMeter(b, pgURL)
	}
	b.ResetTimer()
	cpu0 := benchcmp.CPUTime()
	start := time.Now()
	err := runAll()
	b.StopTimer()
	wall, cpu := time.Since(start), benchcmp.CPUTime()-cpu0
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(events)/wall.Seconds(), "runs/s")
	b.ReportMetric(cold, "cold-runs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(events), "cpu-µs/run")
	if meter != nil {
		meter.Stop(b).Report(b, events, "run")
		mu.Lock()
		for _, reason := range []string{"serialization", "deadlock", "connection", "stale_row"} {
			b.ReportMetric(float64(retries[reason]), "retries-"+reason)
		}
		mu.Unlock()
	}
	benchrun.CheckRuns(b, stores[0], warm+events)
	if counted.Load() != int64(warm+events) {
		b.Fatalf("%d mutations made for %d runs", counted.Load(), warm+events)
	}
}
