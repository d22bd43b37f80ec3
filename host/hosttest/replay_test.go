package hosttest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/host/hosttest"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// mailLedger runs the mail workflow for two signups with a host on an SQLite file that
// records calls, its tools answering as a directory and a mail service would.
func mailLedger(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "ledger.db")
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(ctx, st, host.Options{RecordCalls: true, WasmCacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tools := []*hostfuncs.Tool{
		{Namespace: "Directory", Method: "lookup", ReadOnly: hostfuncs.ReadOnlyAlways,
			Execute: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
				var q struct{ User string }
				_ = json.Unmarshal(in, &q)
				return json.Marshal(map[string]string{"email": q.User + "@example.com"})
			}},
		{Namespace: "Mail", Method: "send",
			Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"id":"m-1"}`), nil
			}},
	}
	if err := h.RegisterTool(tools...); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(mailWorkflow)
	v, err := h.LoadWorkflow(ctx, abs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Publish(ctx,
		ledger.NewEvent{Workflow: v.Workflow, Topic: "signups", MessageID: "u1", Payload: json.RawMessage(`{"user":"ada"}`)},
		ledger.NewEvent{Workflow: v.Workflow, Topic: "signups", MessageID: "u2", Payload: json.RawMessage(`{"user":"grace"}`)},
	); err != nil {
		t.Fatal(err)
	}
	if err := h.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestReplayPasses: the recorded runs replay against the unchanged workflow, one
// passing subtest each, with the embedder's tools' schemas and no real call.
func TestReplayPasses(t *testing.T) {
	db := mailLedger(t)
	hosttest.Replay(t, mailWorkflow, db, hosttest.ReplayOptions{Options: hosttest.Options{WasmCacheDir: t.TempDir()}})
}

// TestCheckReplayDiverges: a changed subject is the first divergence of every run,
// at the line of the Mail.send call.
func TestCheckReplayDiverges(t *testing.T) {
	db := mailLedger(t)
	src, err := os.ReadFile(mailWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(src), "subject: 'Welcome!'", "subject: 'Hello!'", 1)
	wf := filepath.Join(t.TempDir(), "workflow.js")
	if err := os.WriteFile(wf, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	results, report, err := hosttest.CheckReplay(context.Background(), wf, db, hosttest.ReplayOptions{Workflow: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("got %d results, want 2\n%s", len(results), report)
	}
	for _, res := range results {
		if res.Diverged == nil || res.Diverged.Line != 15 {
			t.Errorf("run %s: got %v, want a divergence at line 15", res.Recording.Run.ID, res.Diverged)
		}
	}
	if !strings.Contains(report, `.subject: got "Hello!", want "Welcome!"`) {
		t.Errorf("report lacks the field diff:\n%s", report)
	}
}
