package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
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
// pool (and its listener's own) while it runs four workflows' charges at once, each
// applied once: no transition holds a connection while it waits for another. The
// same host without the flag opens more.
func TestDBConnsCapsTheHost(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	const workflows, charges = 4, 6
	// conns runs the workflows on a fresh ledger with flags and returns the most
	// connections to it seen at once (a pool keeps the ones it opened, idle).
	conns := func(flags ...string) int64 {
		svc := fakesvc.New()
		defer svc.Close()
		e := newSharedEnv(t, svc, "tools.json", charges, "2s")
		args := []string{"--db", e.db, "run"}
		for k := range workflows {
			wf := filepath.Join(e.dir, fmt.Sprintf("charges%d.js", k))
			writeFile(t, wf, strings.ReplaceAll(readFileT(t, e.wf), "'ch-'", fmt.Sprintf("'ch%d-'", k)))
			args = append(args, wf)
		}
		args = append(append(args, "--once", "--tools", e.tools, "--workspace", e.dir, "--concurrency", "8"), flags...)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := pgx.Connect(ctx, e.db)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		var peak int64
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
		code, out, errOut := cli(t, "", args...)
		cancel()
		wg.Wait()
		if !passDone(code) {
			t.Fatalf("run %q: exit %d\n%s%s", flags, code, out, errOut)
		}
		applied := 0
		for _, r := range svc.Requests() {
			if r.Method == http.MethodPost {
				if n := svc.Applies(r.Header.Get("Idempotency-Key")); n != 1 {
					t.Errorf("run %q: charge %s applied %d times, want 1", flags, r.Path, n)
				}
				applied++
			}
		}
		if applied != workflows*charges {
			t.Errorf("run %q: %d charges sent, want %d", flags, applied, workflows*charges)
		}
		return peak
	}
	if n := conns(); n <= 2 {
		t.Fatalf("without --db-conns the host held at most %d connections at once: the test shows nothing", n)
	}
	if n := conns("--db-conns", "1"); n > 2 {
		t.Errorf("--db-conns 1: the host held %d connections at once, want at most 2 (its pool's one and its listener's)", n)
	}
}
