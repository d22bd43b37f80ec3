package hostfuncs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/sandbox"
)

var testNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return testNow }

// openStore opens a fresh SQLite ledger in a temporary directory.
func openStore(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{Clock: fixedClock})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// mutatingRun creates a consumer run and moves it to phase mutating.
func mutatingRun(t *testing.T, s ledger.Store) scripthost.Run {
	t.Helper()
	ctx := context.Background()
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdvancePhase(ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	r, err = s.AdvancePhase(ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// logBuffer is a concurrency-safe buffer for captured logs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func debugLogger(buf *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// wrapperFor returns a wrapper for run r (or a run-less mutation scope when r is nil).
func wrapperFor(reg *hostfuncs.Registry, s ledger.Store, r *scripthost.Run, opts hostfuncs.WrapperOptions) *hostfuncs.ToolWrapper {
	info := hostfuncs.RunInfo{Workflow: "wf", Handler: "h", Scope: "test-scope",
		Subscribes: []string{"in"}, Publishes: []string{"out", "audit"}}
	if r != nil {
		info.RunID, info.Scope = r.ID, ""
	}
	if opts.Clock == nil {
		opts.Clock = fixedClock
	}
	return hostfuncs.NewToolWrapper(reg, s, info, opts)
}

func mustRegister(t *testing.T, reg *hostfuncs.Registry, tools ...*hostfuncs.Tool) {
	t.Helper()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
}

func okTool(ns, method string, op scripthost.Operation) *hostfuncs.Tool {
	return &hostfuncs.Tool{Namespace: ns, Method: method, Operation: op,
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"ok":true}`), nil
		}}
}

func errCode(err error) string {
	var e *scripthost.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func isTerminate(err error) bool { return errors.Is(err, sandbox.ErrTerminate) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func ledgerFilter(runID string) ledger.MutationFilter { return ledger.MutationFilter{RunID: runID} }
