package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// TestWasmAndJSExamplesAgree runs the files example written in JavaScript and each of
// its ports compiled to Wasm (Go, Rust, AssemblyScript) on the same input, under the
// same workflow name, and compares what each left in its ledger: events, mutations
// (with their idempotency keys), handler states, runs, and the files written.
func TestWasmAndJSExamplesAgree(t *testing.T) {
	jsPath, _ := filepath.Abs("../../scripts/files/workflow.js")
	inputs := map[string]string{"a.txt": "alpha", "b.txt": "beta\nsecond line", "c.md": "# gamma"}

	ledgerOf := func(t *testing.T, wf string) (string, string) {
		dir := t.TempDir()
		ws := filepath.Join(dir, "ws")
		for name, content := range inputs {
			putFile(t, filepath.Join(ws, "inbox", name), content)
		}
		db := filepath.Join(dir, "ledger.db")
		code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once", "--name", "files", "--workspace", ws)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", wf, code, stderr)
		}
		return dumpLedger(t, db), dumpDir(t, filepath.Join(ws, "outbox"))
	}
	jsLedger, jsFiles := ledgerOf(t, jsPath)
	if !strings.Contains(jsFiles, "BETA\nSECOND LINE") {
		t.Errorf("outbox: got %q, want the upper-cased inputs", jsFiles)
	}
	for _, port := range []string{"files-wasm", "files-rust"} {
		t.Run(port, func(t *testing.T) {
			wasmPath := exampleWorkflow(t, "../../scripts/"+port)
			if wasmPath == "" {
				t.Fatalf("scripts/%s has no Wasm module", port)
			}
			wasmLedger, wasmFiles := ledgerOf(t, wasmPath)
			if jsLedger != wasmLedger {
				t.Errorf("ledgers differ\n--- js\n%s\n--- %s\n%s", jsLedger, port, wasmLedger)
			}
			if jsFiles != wasmFiles {
				t.Errorf("outboxes differ\n--- js\n%s\n--- %s\n%s", jsFiles, port, wasmFiles)
			}
		})
	}
}

// dumpLedger renders what a ledger holds, without ids and times, in a canonical form.
func dumpLedger(t *testing.T, db string) string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	canon := func(raw []byte) string {
		if len(raw) == 0 {
			return "-"
		}
		c, err := scripthost.CanonicalJSON(raw)
		if err != nil {
			return "invalid:" + string(raw)
		}
		return string(c)
	}
	var b strings.Builder
	evs, err := st.Events(ctx, ledger.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		fmt.Fprintf(&b, "event %s/%s %s %s\n", e.Topic, e.MessageID, e.Status, canon(e.Payload))
	}
	ms, err := st.Mutations(ctx, ledger.MutationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		fmt.Fprintf(&b, "mutation %s %s %s key=%s result=%s\n", m.Tool(), canon(m.Params), m.Status, m.IdempotencyKey, canon(m.Result))
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		fmt.Fprintf(&b, "run %s %s %s outcome=%v\n", r.Handler, r.Phase, r.Status, r.Outcome != nil && r.Outcome.Status == scripthost.OutcomeApplied)
	}
	for _, h := range []string{"scan", "process", "report"} {
		hs, err := st.HandlerState(ctx, "files", h)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "state %s %s\n", h, canon(hs.State))
	}
	return b.String()
}

func dumpDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: %s\n", e.Name(), data)
	}
	return b.String()
}
