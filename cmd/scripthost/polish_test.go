package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
)

func TestVersionAndUsageHints(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "scripthost ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: got exit %d %q, want the version and the Go release", code, out)
	}
	for _, tt := range []struct {
		args  []string
		usage string
	}{
		{[]string{"run", "--frobnicate"}, "Usage: scripthost run WORKFLOW"},
		{[]string{"run"}, "Usage: scripthost run WORKFLOW"},
		{[]string{"show"}, "Usage: scripthost show RUN_ID"},
		{[]string{"explode"}, "Usage: scripthost"},
	} {
		code, _, stderr := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.usage) || !strings.Contains(stderr, "--help' for more") {
			t.Errorf("%v: got exit %d %q, want 2 with the usage line and a hint", tt.args, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "runs", "--status", "sleepy")
	if code != 2 || !strings.Contains(stderr, "failed:logic") || !strings.Contains(stderr, "paused:reconciliation") {
		t.Errorf("bad --status: got %d %q, want the valid statuses listed", code, stderr)
	}
}

// Errors at the CLI edge name the file and the real line, and carry no Go package
// prefix or internal schema name.
func TestEdgeErrors(t *testing.T) {
	dir := t.TempDir()
	badSchema := putFile(t, filepath.Join(dir, "schema.yaml"), "tools:\n  - namespace: A\n    method: b\n    url: http://127.0.0.1:1/\n    input_schema: {type: object, properties: {a: {type: wrong}}}\n")
	badYAML := putFile(t, filepath.Join(dir, "syntax.yaml"), "tools:\n  - namespace: A\n    method: b\n    url: http://127.0.0.1:1/\n    timeout: [1\n")
	code, _, stderr := runCLI(t, "types", "--tools", badSchema)
	if code != 2 || !strings.Contains(stderr, "schema.yaml") || strings.Contains(stderr, "hostfuncs:") || strings.Contains(stderr, "mem:///") || strings.Contains(stderr, "httptool:") {
		t.Errorf("bad schema: got %d %q, want the file named and no internal prefixes", code, stderr)
	}
	code, _, stderr = runCLI(t, "types", "--tools", badYAML)
	if code != 2 || !strings.Contains(stderr, "syntax.yaml:5:") {
		t.Errorf("bad YAML: got %d %q, want the file and line 5", code, stderr)
	}
	wf := putFile(t, filepath.Join(dir, "w", "workflow.js"), "export default { topics: ['a'], producers: { p: { schedule: { every: '1h' }, async handler() { await Files.read({ path: 3 }); } } } };\n")
	_, _, stderr = runCLI(t, "--db", filepath.Join(dir, "l.db"), "run", wf, "--once")
	if !strings.Contains(stderr, "Files.read: invalid input: /path") || strings.Contains(stderr, "sandbox/js:") || strings.Contains(stderr, "hostfuncs:") {
		t.Errorf("bad tool input: got %q, want the tool and field without package prefixes", stderr)
	}
}

// --limit N is the newest N in every listing.
func TestLimitIsTheNewest(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	wf := putFile(t, filepath.Join(dir, "many", "workflow.js"), `export default {
  topics: ['jobs'],
  producers: { tick: { schedule: { every: '1h' }, publishes: ['jobs'],
    async handler() { for (const id of ['a', 'b', 'c']) await Topics.publish({ topic: 'jobs', id, payload: {} }); } } },
  consumers: { work: { subscribe: ['jobs'],
    async prepare() { const [ev] = await Topics.peek({ topic: 'jobs', limit: 1 }); return ev ? { reservations: [{ topic: 'jobs', ids: [ev.id] }], data: ev.id } : null; },
    async mutate(id) { if (id) await Files.write({ path: 'out/' + id, content: id }); },
    async next() {} } },
};
`)
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	var ms []mutationView
	_, out, _ := runCLI(t, "--db", db, "mutations", "--limit", "1", "--json")
	if err := json.Unmarshal([]byte(out), &ms); err != nil || len(ms) != 1 || !strings.Contains(string(ms[0].Params), `"out/c"`) {
		t.Errorf("mutations --limit 1: got %s, want the newest (out/c)", out)
	}
	var evs []scripthost.Event
	_, out, _ = runCLI(t, "--db", db, "events", "--limit", "2", "--json")
	if err := json.Unmarshal([]byte(out), &evs); err != nil || len(evs) != 2 || evs[0].MessageID != "b" || evs[1].MessageID != "c" {
		t.Errorf("events --limit 2: got %s, want b and c", out)
	}
	var runs []scripthost.Run
	_, out, _ = runCLI(t, "--db", db, "runs", "--limit", "1", "--json")
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 1 || runs[0].Handler != "work" {
		t.Errorf("runs --limit 1: got %s, want the newest run", out)
	}
}
