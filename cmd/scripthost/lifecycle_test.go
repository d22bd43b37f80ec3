package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

const lifecycleWorkflow = `export default {
  topics: ['jobs'],
  producers: {
    make: { schedule: { every: '1h' }, publishes: ['jobs'],
      async handler() { console.log('making'); await Topics.publish({ topic: 'jobs', id: 'j1', payload: { n: 1 } }); } },
  },
  consumers: {
    work: { subscribe: ['jobs'],
      async prepare() { const [e] = await Topics.peek({ topic: 'jobs' }); if (!e) return null;
        return { reservations: [{ topic: 'jobs', ids: [e.id] }], data: e.payload }; },
      async mutate(d) { if (d) await Files.write({ path: 'out.txt', content: 'n=' + d.n }); } },
  },
};`

// run --jsonl streams the runs' lifecycle events on stdout, one JSON object a line, and
// moves console output to stderr; show --events prints one run's events.
func TestRunJSONLAndShowEvents(t *testing.T) {
	dir := t.TempDir()
	wf := putFile(t, filepath.Join(dir, "jobs", "workflow.js"), lifecycleWorkflow)
	db := filepath.Join(dir, "ledger.db")
	code, stdout, stderr := runCLI(t, "--db", db, "run", wf, "--once", "--jsonl", "--workspace", filepath.Join(dir, "jobs"))
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "[jobs/make] making") {
		t.Errorf("stderr %q: want the console output there", stderr)
	}
	type line struct {
		Event    string          `json:"event"`
		Time     string          `json:"time"`
		Seq      int64           `json:"seq"`
		RunID    string          `json:"run_id"`
		Workflow string          `json:"workflow"`
		Handler  string          `json:"handler"`
		Mutation string          `json:"mutation_id"`
		Data     json.RawMessage `json:"data"`
	}
	var lines []line
	byHandler := map[string][]string{}
	runOf := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev line
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("stdout line %q: %v (want only JSON lines)", l, err)
		}
		if ev.Event == "" || ev.Time == "" || ev.RunID == "" || ev.Workflow != "jobs" {
			t.Errorf("line %q: want event, time, run and workflow", l)
		}
		if n := len(lines); n > 0 && ev.Seq <= lines[n-1].Seq {
			t.Errorf("line %q: seq %d after %d, want increasing", l, ev.Seq, lines[n-1].Seq)
		}
		lines = append(lines, ev)
		byHandler[ev.Handler] = append(byHandler[ev.Handler], ev.Event)
		runOf[ev.Handler] = ev.RunID
	}
	want := map[string]string{
		"make": "phase_started phase_completed committed",
		"work": "phase_started phase_completed phase_started mutation_recorded mutation_outcome phase_completed phase_started phase_completed committed",
	}
	for h, w := range want {
		if got := strings.Join(byHandler[h], " "); got != w {
			t.Errorf("%s events:\n got %s\nwant %s", h, got, w)
		}
	}

	code, stdout, stderr = runCLI(t, "--db", db, "show", runOf["work"], "--events")
	if code != 0 {
		t.Fatalf("show --events: exit %d: %s", code, stderr)
	}
	for _, w := range []string{"SEQ", "EVENT", "phase_started", "phase=mutate", "mutation_recorded", "idempotency_key=", "tool=Files.write", "committed"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("show --events:\n%s\nwant %q", stdout, w)
		}
	}
	code, stdout, _ = runCLI(t, "--db", db, "show", runOf["work"], "--events", "--json")
	if code != 0 || strings.Count(stdout, "\n") != len(byHandler["work"]) || !strings.Contains(stdout, `"event":"committed"`) {
		t.Errorf("show --events --json: exit %d\n%s\nwant %d JSON lines", code, stdout, len(byHandler["work"]))
	}
	// show without --events carries the log too.
	code, stdout, _ = runCLI(t, "--db", db, "show", runOf["work"])
	var detail struct {
		Lifecycle []json.RawMessage `json:"lifecycle"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &detail) != nil || len(detail.Lifecycle) != len(byHandler["work"]) {
		t.Errorf("show: exit %d, lifecycle %d entries, want %d", code, len(detail.Lifecycle), len(byHandler["work"]))
	}
	if code, _, stderr := runCLI(t, "--db", db, "show", runOf["work"], "--json"); code != 2 || !strings.Contains(stderr, "--json goes with --events") {
		t.Errorf("show --json alone: exit %d %q, want a usage error", code, stderr)
	}
	// A second run streams only what it adds: nothing is left to do.
	code, stdout, _ = runCLI(t, "--db", db, "run", wf, "--once", "--jsonl", "--workspace", filepath.Join(dir, "jobs"))
	if code != 0 || strings.TrimSpace(stdout) != "" {
		t.Errorf("second run: exit %d, stdout %q, want nothing streamed", code, stdout)
	}
}
