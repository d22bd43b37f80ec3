package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/fakesvc"
)

// TestDBConnsRefusedWhereMeaningless: --db-conns below 1, or with an SQLite ledger, is
// a usage error (exit 2) that names the flag, and nothing runs.
func TestDBConnsRefusedWhereMeaningless(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--db-conns", "0", "--db", "postgres://h/db", "runs"}, "--db-conns 0: want 1 or more"},
		{[]string{"--db-conns", "-3", "--db", "postgres://h/db", "runs"}, "--db-conns -3: want 1 or more"},
		{[]string{"--db-conns", "4", "--db", t.TempDir() + "/ledger.db", "runs"}, "--db-conns caps the connections to a PostgreSQL ledger"},
		{[]string{"--db-conns", "four", "runs"}, `invalid argument "four" for "--db-conns"`},
	} {
		code, out, errOut := cli(t, "", tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: got exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, errOut, out, tc.want)
		}
	}
}

// TestDBConnsCapsTheHost: a host given --db-conns 1 keeps to one connection of its
// pool (and its listener's own) while it runs a workflow's charges, each applied once:
// no transition holds a connection while it waits for another.
func TestDBConnsCapsTheHost(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := fakesvc.New()
	defer svc.Close()
	const charges = 12
	e := newSharedEnv(t, svc, "tools.json", charges, "2s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := pgx.Connect(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var peak int64 // the most connections of the host's seen at once
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			var n int64
			if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n); err == nil {
				peak = max(peak, n)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	e.mustRun("--db-conns", "1", "--concurrency", "8")
	cancel()
	wg.Wait()
	if peak > 2 {
		t.Errorf("--db-conns 1: the host held %d connections at once, want at most 2 (its pool's one and its listener's)", peak)
	}
	e.checkCharged(t, svc, charges)
}
