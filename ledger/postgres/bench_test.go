package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
)

// BenchmarkMutation measures the durable in-flight write plus the apply per mutation
// (each its own committed transaction): one run after the other, and 16 runs at once
// on each of 1 and 4 hosts sharing the ledger (each host its own connection pool).
// ledger/sqlite's BenchmarkMutation/runs=16 in the same `make bench` run is the
// reference the table sets it against.
func BenchmarkMutation(b *testing.B) {
	b.Run("Sequential", func(b *testing.B) { benchMutations(b, 1, 1) })
	for _, hosts := range []int{1, 4} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) { benchMutations(b, hosts, 16) })
	}
}

// benchMutations makes b.N mutations with workers goroutines on each of hosts stores.
func benchMutations(b *testing.B, hosts, workers int) {
	ctx := context.Background()
	url := pgtest.URL(b)
	stores := make([]*Store, hosts)
	for h := range stores {
		s, err := Open(ctx, url, Options{MaxConns: workers + 2})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		warm(b, s, workers)
		stores[h] = s
	}
	s := stores[0]
	ids := make([]string, b.N)
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
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, hosts*workers)
	b.ResetTimer()
	for w := range hosts * workers {
		s := stores[w%hosts]
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: ids[i], Namespace: "Shop", Method: "ship",
					Params: json.RawMessage(`{"order":1}`), InputHash: "ih-" + ids[i], IdempotencyKey: "key-" + ids[i]})
				if err == nil {
					_, err = s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"ok":true}`))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if sec := b.Elapsed().Seconds(); sec > 0 {
		b.ReportMetric(float64(b.N)/sec, "mutations/s")
	}
}

// warm opens n connections of s's pool before the timer starts, so that connection
// set-up (a server process each) is not timed as mutations.
func warm(b *testing.B, s *Store, n int) {
	ctx := context.Background()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := s.db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.PingContext(ctx); err != nil {
			b.Fatal(err)
		}
		conns[i] = c
	}
	for _, c := range conns {
		_ = c.Close()
	}
}
