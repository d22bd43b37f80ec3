package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// migrateBeyond does to the ledger in schema what a binary that knows one more
// migration does when it opens it: records the next version and, in the same
// transaction, announces it when announce is set.
func migrateBeyond(t *testing.T, url, schema string, announce bool) int {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	next := postgres.SchemaVersion() + 1
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	stmts := []string{fmt.Sprintf(`INSERT INTO %s.scripthost_schema VALUES (%d, '%04d_future.sql', 0)`, schema, next, next)}
	if announce {
		stmts = append(stmts, fmt.Sprintf(`SELECT pg_notify('scripthost-schema:%s', '%d')`, schema, next))
	}
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return next
}

// wantTooNew checks that err refuses a ledger at schema version have, naming both
// versions and what to do.
func wantTooNew(t *testing.T, what string, err error, have int) {
	t.Helper()
	if !errors.Is(err, ledger.ErrSchemaTooNew) {
		t.Fatalf("%s: got %v, want ErrSchemaTooNew", what, err)
	}
	for _, want := range []string{"schema version " + strconv.Itoa(have), "versions up to " + strconv.Itoa(postgres.SchemaVersion()), "upgrade scripthost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not say %q", what, err, want)
		}
	}
}

// TestOutdatedByNewerHost: a host whose ledger a newer host migrates while it runs
// learns of it from the migration's notification, and from then on refuses to write
// (reads go on), with the error a fresh start of it gets too.
func TestOutdatedByNewerHost(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	old := open(t, url, postgres.Options{})
	listening(t, old, "wf")
	select {
	case <-old.Outdated():
		t.Fatal("outdated before any migration")
	default:
	}
	if _, err := old.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "t", MessageID: "1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}

	have := migrateBeyond(t, url, "public", true)
	select {
	case <-old.Outdated():
	case <-time.After(30 * time.Second):
		t.Fatal("the running host did not learn of the migration")
	}
	wantTooNew(t, "outdated error", old.OutdatedErr(), have)
	_, err := old.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "t", MessageID: "2", Payload: json.RawMessage(`{}`)})
	wantTooNew(t, "write after the migration", err, have)
	if _, _, err := old.ClaimLease(ctx, "wf", "old-host", time.Minute); !errors.Is(err, ledger.ErrSchemaTooNew) {
		t.Errorf("lease claim after the migration: got %v, want ErrSchemaTooNew", err)
	}
	evs, err := old.Events(ctx, ledger.EventFilter{Workflow: "wf"})
	if err != nil || len(evs) != 1 {
		t.Errorf("read after the migration: got %d events, %v; want the one published before", len(evs), err)
	}

	_, err = postgres.Open(ctx, url, postgres.Options{})
	wantTooNew(t, "open", err, have)
}

// TestOutdatedAtConnect: a host whose listener connects after the ledger was migrated
// past its schema (the notification missed, as while the database was away) finds out
// at that connect.
func TestOutdatedAtConnect(t *testing.T) {
	url := pgtest.URL(t)
	old := open(t, url, postgres.Options{})
	have := migrateBeyond(t, url, "public", false)
	ch, stop := old.Wakeups("wf")
	defer stop()
	select {
	case <-old.Outdated():
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not find the newer schema when its listener connected")
	}
	<-ch
	wantTooNew(t, "outdated error", old.OutdatedErr(), have)
}

// TestMigrationAnnounced: a binary that migrates an existing ledger announces the new
// version to the hosts listening on it, in the migration's transaction.
func TestMigrationAnnounced(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	listen := migrateTo(t, url, "olds", postgres.SchemaVersion()-1)
	if _, err := listen.Exec(ctx, `LISTEN "scripthost-schema:olds"`); err != nil {
		t.Fatal(err)
	}
	open(t, url, postgres.Options{Schema: "olds"})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := listen.WaitForNotification(wctx)
	if err != nil {
		t.Fatalf("no announcement of the migration: %v", err)
	}
	if n.Payload != strconv.Itoa(postgres.SchemaVersion()) {
		t.Errorf("announced version: got %q, want %d", n.Payload, postgres.SchemaVersion())
	}
}

// TestOpenUnreachable: a server that refuses connections is waited for up to
// ConnectWait, then refused as unavailable, naming the database without its password.
func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	url := "postgres://scripthost:hunter2@" + addr + "/ledger?sslmode=disable"
	_, err = postgres.Open(context.Background(), url, postgres.Options{ConnectWait: 500 * time.Millisecond})
	if !errors.Is(err, ledger.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"postgres: open postgres://scripthost:xxxxx@" + addr + "/ledger", "no answer within 500ms", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("%q shows the password", err)
	}
}
