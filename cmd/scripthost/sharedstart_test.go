package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// dbDigest lists every table outside PostgreSQL's own schemas with its row count, and
// the ledger's schema versions when it has them, so that two digests differ when a
// table was created or dropped or rows were written.
func dbDigest(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	var names []pgx.Identifier
	for rows.Next() {
		var schema, table string
		if err := rows.Scan(&schema, &table); err != nil {
			t.Fatal(err)
		}
		names = append(names, pgx.Identifier{schema, table})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range names {
		var count int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM `+n.Sanitize()).Scan(&count); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d\n", n.Sanitize(), count)
		if n[1] == "scripthost_schema" {
			var versions string
			if err := c.QueryRow(ctx, `SELECT string_agg(version::text, ',' ORDER BY version) FROM `+n.Sanitize()).Scan(&versions); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "  versions %s\n", versions)
		}
	}
	return b.String()
}

// execSQL runs statements on the database of url.
func execSQL(t *testing.T, url string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range stmts {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// newerLedger creates a ledger in the database of url and records one schema version
// more than this binary knows, as a newer binary's migration would; it returns that
// version.
func newerLedger(t *testing.T, url string) int {
	t.Helper()
	st, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	next := postgres.SchemaVersion() + 1
	execSQL(t, url, fmt.Sprintf(`INSERT INTO scripthost_schema VALUES (%d, '%04d_future.sql', 0)`, next, next))
	return next
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestSharedLedgerRefusedAtStart starts run and serve with a --db that cannot be a
// shared ledger: a URL that does not parse, a URL of another scheme (which must not
// be taken for an SQLite file path), a server that refuses connections (refused after
// a bounded wait), a database holding something else's tables and a ledger of a newer
// schema version. Each is refused at start with its exit code and a message that says
// what and where (the URL, without its password) and what to do, and nothing is
// written: no file in the working directory, no table or row in the database.
func TestSharedLedgerRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	wf := filepath.Join(dir, "pinger.js")
	writeFile(t, wf, pingWorkflow)
	t.Setenv(serveTokenEnv, "a-token-of-twenty-chars")
	closed := closedPort(t)

	newer := []string{"knows versions up to " + strconv.Itoa(postgres.SchemaVersion()), "this is scripthost ",
		"upgrade scripthost on this host"}
	tests := []struct {
		name string
		// setup returns the --db value, the URL of the database to compare before and
		// after ("" for none), and what the message must say besides want.
		setup func(t *testing.T) (db, digest string, also []string)
		code  int
		want  []string
	}{
		{"a URL that does not parse", func(t *testing.T) (string, string, []string) {
			return "postgres://scripthost:hunter2@[::1/ledger", "", nil
		}, 2, []string{"--db postgres://scripthost:xxxxx@[::1/ledger: not a valid PostgreSQL URL"}},
		{"a URL of another scheme", func(t *testing.T) (string, string, []string) {
			return "mysql://scripthost:hunter2@db.internal/ledger", "", nil
		}, 2, []string{"--db mysql://scripthost:xxxxx@db.internal/ledger: mysql:// URLs are not supported", "postgres:// URL"}},
		{"a server that refuses connections", func(t *testing.T) (string, string, []string) {
			return "postgres://scripthost:hunter2@" + closed + "/ledger?sslmode=disable", "", nil
		}, 5, []string{"postgres://scripthost:xxxxx@" + closed + "/ledger", "database unavailable: no answer within 10s", "connection refused"}},
		{"a database of something else", func(t *testing.T) (string, string, []string) {
			url := pgtest.URL(t)
			execSQL(t, url, `CREATE TABLE accounts (id int)`, `INSERT INTO accounts VALUES (1)`)
			return url, url, nil
		}, 8, []string{"not a scripthost ledger", `schema "public" holds tables that are not a ledger's (accounts)`, "nothing was created", "empty database"}},
		{"a ledger of a newer version", func(t *testing.T) (string, string, []string) {
			url := pgtest.URL(t)
			v := newerLedger(t, url)
			return url, url, []string{"schema version " + strconv.Itoa(v)}
		}, 8, newer},
	}
	for _, tc := range tests {
		for _, cmd := range []string{"run", "serve"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				db, digestURL, also := tc.setup(t)
				want := append(append([]string(nil), tc.want...), also...)
				var before string
				if digestURL != "" {
					before = dbDigest(t, digestURL)
				}
				files := treeDigest(t, dir)
				args := []string{"--db", db, cmd, wf, "--workspace", dir}
				if cmd == "run" {
					args = append(args, "--once")
				} else {
					args = append(args, "--listen", "127.0.0.1:0")
				}
				start := time.Now()
				code, _, errOut := cli(t, "", args...)
				t.Logf("%s refused in %v: %s", cmd, time.Since(start).Round(time.Millisecond), strings.TrimSpace(errOut))
				if code != tc.code {
					t.Errorf("exit: got %d, want %d", code, tc.code)
				}
				for _, w := range want {
					if !strings.Contains(errOut, w) {
						t.Errorf("message %q does not say %q", errOut, w)
					}
				}
				if strings.Contains(errOut, "hunter2") {
					t.Errorf("message %q shows the password", errOut)
				}
				if got := treeDigest(t, dir); got != files {
					t.Errorf("files changed:\n%s\nwant:\n%s", got, files)
				}
				if digestURL != "" {
					if got := dbDigest(t, digestURL); got != before {
						t.Errorf("database changed:\n%s\nwant:\n%s", got, before)
					}
				}
			})
		}
	}
}

// TestSharedLedgerMigratedUnderHost: a host (a real process) runs on a PostgreSQL
// ledger when a newer host migrates it (a schema version this binary does not know,
// announced as a migration does). The host logs why, stops and exits 8 with the
// message that names both versions; it takes up nothing published afterwards.
func TestSharedLedgerMigratedUnderHost(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	h := startPinger(t, url, dir, "old", 100*time.Millisecond)
	c := pgConn(t, url)
	waitPasses(t, c, h, "pinger", 2)

	next := postgres.SchemaVersion() + 1
	execSQL(t, url, `BEGIN`, fmt.Sprintf(`INSERT INTO scripthost_schema VALUES (%d, '%04d_future.sql', 0)`, next, next),
		fmt.Sprintf(`SELECT pg_notify('scripthost-schema:public', '%d')`, next), `COMMIT`)
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = h.cmd.Process.Signal(syscall.SIGKILL)
		<-done
		t.Fatalf("the host did not stop after the migration:\n%s", h.out.String())
	}
	out := h.out.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLedger {
		t.Errorf("exit: got %v, want %d\n%s", err, exitLedger, out)
	}
	for _, want := range []string{"ledger migrated by a newer host: stopping", "schema version " + strconv.Itoa(next),
		"knows versions up to " + strconv.Itoa(postgres.SchemaVersion()), "this host stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	// The ledger as the newer host left it: the old host wrote nothing after it stopped.
	before := dbDigest(t, url)
	st, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err == nil {
		st.Close()
		t.Fatal("a fresh open of the migrated ledger by this binary succeeded")
	}
	if got := dbDigest(t, url); got != before {
		t.Errorf("database changed by the refused open:\n%s\nwant:\n%s", got, before)
	}
}
