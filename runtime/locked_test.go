package runtime_test

import (
	"bytes"
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// lockedBuffer is a log sink safe for the scheduler's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestRunSurvivesALockedLedger holds the ledger's write lock from another connection
// while a long-running host works: its passes fail, are logged and retried, and once
// the lock is gone the host finishes the work instead of having exited.
func TestRunSurvivesALockedLedger(t *testing.T) {
	h := newHarness(t)
	h.load("orders", orders)
	h.close()
	// Reopen with a short busy timeout so that the lock shows quickly.
	st, err := sqlite.Open(h.ctx, h.db, sqlite.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h.store = st
	var logs lockedBuffer
	eng := js.New(js.Options{})
	rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": eng}, Tools: h.reg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(h.ctx)

	h.publish("orders", "orders", "a")
	raw, err := sql.Open("sqlite3", h.db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn, err := raw.Conn(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(h.ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx, []string{"orders"}, 10*time.Millisecond) }()

	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "scheduling pass failed") {
		if time.Now().After(deadline) {
			t.Fatal("no failed pass was logged while the ledger was locked")
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned while the ledger was locked: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := conn.ExecContext(h.ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	for h.events("orders", "orders")["a"] != scripthost.EventConsumed {
		if time.Now().After(deadline) {
			t.Fatalf("event not processed after the lock was released; logs:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: got %v, want nil after cancel", err)
	}
	if got := h.svc.count(); got != 1 {
		t.Errorf("applies: got %d, want 1", got)
	}
}
