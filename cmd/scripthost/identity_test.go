package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// sideEffect publishes one event per hour and writes one file per event: a second
// mutation would mean the same work was done twice.
const sideEffect = `export default {
  topics: ['jobs'],
  producers: { tick: { schedule: { every: '1h' }, publishes: ['jobs'],
    async handler() { await Topics.publish({ topic: 'jobs', id: 'job-1', payload: {} }); } } },
  consumers: { work: { subscribe: ['jobs'],
    async prepare() { const [ev] = await Topics.peek({ topic: 'jobs', limit: 1 }); return ev ? { reservations: [{ topic: 'jobs', ids: [ev.id] }], data: ev.id } : null; },
    async mutate(id) { if (id) await Files.write({ path: 'out/' + id, content: 'done' }); },
    async next() {} } },
};
`

func openLedger(t *testing.T, db string) ledger.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// One file has one name however its path is spelled, so running it twice does its
// work once.
func TestWorkflowIdentityIgnoresPathSpelling(t *testing.T) {
	dir := t.TempDir()
	wf := putFile(t, filepath.Join(dir, "a", "workflow.js"), sideEffect)
	db := filepath.Join(dir, "l.db")
	t.Chdir(filepath.Join(dir, "a"))
	if code, _, stderr := runCLI(t, "--db", db, "run", "workflow.js", "--once"); code != 0 {
		t.Fatalf("relative run: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != 0 {
		t.Fatalf("absolute run: exit %d: %s", code, stderr)
	}
	st := openLedger(t, db)
	wfs, err := st.Workflows(context.Background())
	if err != nil || len(wfs) != 1 || wfs[0].Name != "a" || wfs[0].LatestVersion != 1 {
		t.Errorf("workflows: got %+v %v, want one, a, version 1", wfs, err)
	}
	ms, err := st.Mutations(context.Background(), ledger.MutationFilter{})
	if err != nil || len(ms) != 1 {
		t.Errorf("mutations: got %d %v, want 1", len(ms), err)
	}
}

// Two files that derive the same name are not silently versions of one workflow.
func TestWorkflowNameBelongsToOneFile(t *testing.T) {
	dir := t.TempDir()
	x := putFile(t, filepath.Join(dir, "x", "shop", "workflow.js"), sideEffect)
	y := putFile(t, filepath.Join(dir, "y", "shop", "workflow.js"), strings.Replace(sideEffect, "'1h'", "'2h'", 1))
	db := filepath.Join(t.TempDir(), "l.db")
	if code, _, stderr := runCLI(t, "--db", db, "run", x, "--once", "--workspace", dir); code != 0 {
		t.Fatalf("first file: exit %d: %s", code, stderr)
	}
	code, _, stderr := runCLI(t, "--db", db, "run", y, "--once", "--workspace", dir)
	if code != 3 || !strings.Contains(stderr, x) || !strings.Contains(stderr, y) || !strings.Contains(stderr, "--replace") {
		t.Fatalf("second file: got exit %d %q, want 3 naming both files and --replace", code, stderr)
	}
	st := openLedger(t, db)
	if w, err := st.Workflow(context.Background(), "shop"); err != nil || w.LatestVersion != 1 {
		t.Errorf("after the refusal: got %+v %v, want shop still at version 1", w, err)
	}
	// Another name, from the command line or the definition, is a workflow of its own.
	if code, _, stderr := runCLI(t, "--db", db, "run", y, "--once", "--workspace", dir, "--name", "shop-y"); code != 0 {
		t.Errorf("--name: exit %d: %s", code, stderr)
	}
	named := putFile(t, filepath.Join(dir, "z", "shop", "workflow.js"), strings.Replace(sideEffect, "export default {", "export default {\n  name: 'shop-z',", 1))
	if code, _, stderr := runCLI(t, "--db", db, "run", named, "--once", "--workspace", dir); code != 0 || !strings.Contains(stderr, "workflow shop-z version 1") {
		t.Errorf("name: in the definition: exit %d: %s", code, stderr)
	}
	// --replace moves the name on purpose.
	if code, _, stderr := runCLI(t, "--db", db, "run", y, "--once", "--workspace", dir, "--replace"); code != 0 {
		t.Fatalf("--replace: exit %d: %s", code, stderr)
	}
	v, err := st.WorkflowVersion(context.Background(), "shop", 0)
	if err != nil || v.Version != 2 || v.Path != y {
		t.Errorf("after --replace: got version %d at %s (%v), want 2 at %s", v.Version, v.Path, err, y)
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "job-1")); err != nil {
		t.Error(err)
	}
}
