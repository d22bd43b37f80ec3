package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// jsonLines returns the JSON log lines of stderr whose msg is msg.
func jsonLines(t *testing.T, stderr, msg string) []map[string]any {
	t.Helper()
	var found []map[string]any
	for line := range strings.SplitSeq(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			found = append(found, m)
		}
	}
	return found
}

// TestRunLogsAFailedRun: a run whose next phase throws makes run write an ERROR line
// naming the run, its handler, the phase and the error, in JSON and in text.
func TestRunLogsAFailedRun(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	wf := jobWorkflow(t, dir, map[string]string{"NEXT": "throw new Error('boom');"})
	code, _, stderr := runCLI(t, "--db", db, "--log-format", "json", "run", wf, "--once")
	if code != exitBlocked {
		t.Fatalf("got exit %d %q, want %d", code, stderr, exitBlocked)
	}
	runID := regexp.MustCompile(`scripthost retry (\S+)`).FindStringSubmatch(stderr)
	if runID == nil {
		t.Fatalf("stderr %q does not name the failed run", stderr)
	}
	lines := jsonLines(t, stderr, "run failed")
	if len(lines) != 1 {
		t.Fatalf("got %d 'run failed' lines, want 1:\n%s", len(lines), stderr)
	}
	l := lines[0]
	if l["level"] != "ERROR" || l["run_id"] != runID[1] || l["workflow"] != "jobs" || l["handler"] != "work" ||
		l["phase"] != "next" || !strings.Contains(l["err"].(string), "boom") {
		t.Errorf("the line %v does not say which run failed where and why", l)
	}

	// The same in text, for the run of a second event.
	dir = t.TempDir()
	wf = jobWorkflow(t, dir, map[string]string{"NEXT": "throw new Error('boom');"})
	_, _, stderr = runCLI(t, "--db", filepath.Join(dir, "l.db"), "run", wf, "--once")
	if !regexp.MustCompile(`level=ERROR msg="run failed" run_id=\S+ workflow=jobs handler=work .*phase=next`).MatchString(stderr) {
		t.Errorf("no text line for the failed run:\n%s", stderr)
	}
}

// TestRunLogsAnIndeterminateMutation: a mutation whose answer is lost by a tool that
// cannot be asked what became of it turns indeterminate, and run says so with the
// run's and the mutation's ids.
func TestRunLogsAnIndeterminateMutation(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := newEchoService(t)
	svc.status = http.StatusBadGateway
	e := newHTTPEnv(t, svc.srv.URL, "tools-blind.json", 1, "2s")
	code, _, stderr := e.run("--log-format", "json")
	if !passDone(code) {
		t.Fatalf("run: got exit %d\n%s", code, stderr)
	}
	ms := e.mutations()
	if len(ms) != 1 || ms[0].Status != "indeterminate" {
		t.Fatalf("mutations %+v, want one indeterminate", ms)
	}
	lines := jsonLines(t, stderr, "mutation indeterminate: a person must resolve it")
	if len(lines) != 1 {
		t.Fatalf("got %d indeterminate lines, want 1:\n%s", len(lines), stderr)
	}
	l := lines[0]
	if l["level"] != "WARN" || l["mutation_id"] != ms[0].ID || l["run_id"] != ms[0].RunID || l["tool"] != "Charges.create" {
		t.Errorf("the line %v does not name mutation %s of run %s", l, ms[0].ID, ms[0].RunID)
	}
	if strings.Contains(stderr, e2eToken) {
		t.Errorf("the secret is in the log:\n%s", stderr)
	}
}

// TestServeLogsAFailedRun: serve writes the same line as run for a run that fails,
// from the same observer, in JSON when asked.
func TestServeLogsAFailedRun(t *testing.T) {
	dir := t.TempDir()
	wf := jobWorkflow(t, dir, map[string]string{"NEXT": "throw new Error('boom');"})
	s := startServe(t, filepath.Join(dir, "l.db"), "--log-format", "json", wf, "--token", testServeToken)
	waitFor(t, func() bool { return len(jsonLines(t, s.stderr.String(), "run failed")) == 1 })
	l := jsonLines(t, s.stderr.String(), "run failed")[0]
	if l["level"] != "ERROR" || l["handler"] != "work" || l["phase"] != "next" || l["run_id"] == "" {
		t.Errorf("the line %v does not say which run failed where", l)
	}
}
