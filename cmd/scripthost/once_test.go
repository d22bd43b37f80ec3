package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// oneJob publishes one event; its consumer writes a file and runs NEXT in next.
const oneJob = `export default {
  topics: ['jobs'],
  producers: { tick: { schedule: { every: '1h' }, publishes: ['jobs'],
    async handler() { await Topics.publish({ topic: 'jobs', id: 'job-1', payload: {} }); } } },
  consumers: { work: { subscribe: ['jobs'], ONERROR
    async prepare() { PREPARE const [ev] = await Topics.peek({ topic: 'jobs', limit: 1 }); return ev ? { reservations: [{ topic: 'jobs', ids: [ev.id] }], data: ev.id } : null; },
    async mutate(id) { if (id) { await Files.write({ path: 'out/' + id, content: 'done' }); MUTATE } },
    async next() { NEXT } } },
};
`

func jobWorkflow(t *testing.T, dir string, parts map[string]string) string {
	t.Helper()
	src := oneJob
	for _, k := range []string{"ONERROR", "PREPARE", "MUTATE", "NEXT"} {
		src = strings.Replace(src, k, parts[k], 1)
	}
	return putFile(t, filepath.Join(dir, "jobs", "workflow.js"), src)
}

// A run that fails makes run --once exit 9 and say how to unblock the handler; retry
// runs the fix stored since, not the broken version.
func TestOnceFailedRunAndRetryOfTheFix(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	wf := jobWorkflow(t, dir, map[string]string{"NEXT": "throw new Error('boom');"})
	code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once")
	if code != exitBlocked || !strings.Contains(stderr, "blocked: jobs/work") || !strings.Contains(stderr, "boom") {
		t.Fatalf("failed run: got exit %d %q, want %d naming the blocked handler and the error", code, stderr, exitBlocked)
	}
	runID := regexp.MustCompile(`scripthost retry (\S+)`).FindStringSubmatch(stderr)
	if runID == nil {
		t.Fatalf("stderr %q does not say which run to retry", stderr)
	}
	jobWorkflow(t, dir, map[string]string{"NEXT": "return { ok: true };"})
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != exitBlocked || !strings.Contains(stderr, "version 2") {
		t.Fatalf("fix stored, not yet retried: got exit %d %q, want %d and version 2", code, stderr, exitBlocked)
	}
	code, stdout, stderr := runCLI(t, "--db", db, "retry", runID[1])
	if code != 0 || !strings.Contains(stdout, "on version 2") {
		t.Fatalf("retry: got exit %d %q %q, want the newest version 2", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != 0 {
		t.Fatalf("after the retry: got exit %d %q, want 0", code, stderr)
	}
	st := openLedger(t, db)
	ms, _ := st.Mutations(context.Background(), ledger.MutationFilter{})
	if len(ms) != 1 {
		t.Errorf("mutations: got %d, want 1 (the retry resumes at next)", len(ms))
	}
	if code, _, stderr := runCLI(t, "--db", db, "retry", runID[1], "--version", "7"); code != exitRefused || !strings.Contains(stderr, "version 7") {
		t.Errorf("unknown version: got exit %d %q, want %d", code, stderr, exitRefused)
	}
}

// Runs that wait for an automatic retry make --once exit 10; --wait keeps going until
// they are done.
func TestOnceWaitingRunsAndWait(t *testing.T) {
	throw := map[string]string{"PREPARE": "throw new Error('not yet');"}
	dir := t.TempDir()
	throw["ONERROR"] = "onError: { strategy: 'retry', maxRetries: 1, delayMs: 3600000 },"
	wf := jobWorkflow(t, dir, throw)
	db := filepath.Join(dir, "l.db")
	code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once", "--wait", "1s")
	if code != exitUnfinished || !strings.Contains(stderr, "waiting: jobs/work") {
		t.Fatalf("retry in an hour: got exit %d %q, want %d naming the waiting run", code, stderr, exitUnfinished)
	}

	dir = t.TempDir()
	throw["ONERROR"] = "onError: { strategy: 'retry', maxRetries: 2, delayMs: 100 },"
	wf = jobWorkflow(t, dir, throw)
	db = filepath.Join(dir, "l.db")
	code, _, stderr = runCLI(t, "--db", db, "run", wf, "--once", "--wait", "1m")
	if code != exitBlocked {
		t.Fatalf("--wait: got exit %d %q, want %d once the retries are used up", code, stderr, exitBlocked)
	}
	runs, _ := openLedger(t, db).Runs(context.Background(), ledger.RunFilter{Handler: "work"})
	if len(runs) != 3 {
		t.Errorf("--wait: got %d runs of work, want 3 (both retries ran)", len(runs))
	}
	if code, _, _ := runCLI(t, "--db", db, "run", wf, "--wait", "1s"); code != 2 {
		t.Errorf("--wait without --once: got exit %d, want 2", code)
	}
}

// A second mutation in mutate is not executed; it is recorded on the run and printed.
func TestSecondMutationIsAWarning(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "l.db")
	wf := jobWorkflow(t, dir, map[string]string{"MUTATE": "await Files.write({ path: 'out/again', content: 'x' });"})
	code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once")
	if code != 0 || !strings.Contains(stderr, "warning: jobs/work") || !strings.Contains(stderr, "Only one mutation allowed per mutate phase") {
		t.Fatalf("got exit %d %q, want 0 and a warning about the second mutation", code, stderr)
	}
	runs, _ := openLedger(t, db).Runs(context.Background(), ledger.RunFilter{Handler: "work"})
	if len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted {
		t.Fatalf("got runs %+v, want one committed", runs)
	}
	_, stdout, _ := runCLI(t, "--db", db, "show", runs[0].ID)
	var d runDetail
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Warnings) != 1 || d.Warnings[0].Code != scripthost.CodeSecondMutation || d.Warnings[0].Tool != "Files.write" {
		t.Errorf("show: got warnings %+v, want the second Files.write", d.Warnings)
	}
}
