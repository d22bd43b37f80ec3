package runtime_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
)

// projectDir is a workflow of several modules, a tsconfig paths alias and two packages
// under node_modules (see sandbox/js/bundle).
const projectDir = "../sandbox/js/bundle/testdata/project"

// copyProject copies the project under h's directory and returns its entry file.
func (h *harness) copyProject(files map[string]string) string {
	h.t.Helper()
	dst := filepath.Join(h.dir, "project")
	err := filepath.WalkDir(projectDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(projectDir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	for name, text := range files {
		h.write(filepath.Join(dst, name), text)
	}
	return filepath.Join(dst, "workflow.ts")
}

func (h *harness) write(path, text string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// loadFile loads the workflow file at path as the CLI does: its text read from disk.
func (h *harness) loadFile(path string) (ledger.WorkflowVersion, error) {
	h.t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.rt.Load(h.ctx, runtime.WorkflowFile{Path: path, Source: src})
}

// TestModulesStoredAndRunWithoutFiles: a workflow of several modules and packages is
// stored as one bundle with its manifest; after the project is deleted and the
// process restarted, the stored version still runs, from the ledger alone.
func TestModulesStoredAndRunWithoutFiles(t *testing.T) {
	h := newHarness(t)
	entry := h.copyProject(nil)
	v, err := h.loadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range v.Manifest {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); !strings.Contains(got, "lib/money.ts lib/rates.js lib/rates.json node_modules/greet/esm/index.js") {
		t.Errorf("manifest: got %s", got)
	}
	stored, err := h.store.WorkflowVersion(h.ctx, "project", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Manifest) != len(v.Manifest) || !strings.Contains(string(stored.Source), "sourceMappingURL=data:") {
		t.Errorf("stored version: manifest %v, source without its source map", stored.Manifest)
	}

	h.publish("project", "orders", "a")
	if err := os.RemoveAll(filepath.Dir(entry)); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.runOnce("project")
	runs := h.runs("project")
	if len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted {
		t.Fatalf("runs: got %+v, want one committed", runs)
	}
	if got, want := h.state("project", "price"), `{"n":1}`; got != want {
		t.Errorf("state: got %s, want %s", got, want)
	}
	if got := strings.Join(h.consoleLines(), "\n"); !strings.Contains(got, "price: priced 0") {
		t.Errorf("console: got %q", got)
	}
}

// TestModulesChangeMakesVersion: a change in an imported file, not in the entry, makes
// a new version; loading unchanged files keeps the version.
func TestModulesChangeMakesVersion(t *testing.T) {
	h := newHarness(t)
	entry := h.copyProject(nil)
	v1, err := h.loadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := h.loadFile(entry); err != nil || again.Version != v1.Version {
		t.Fatalf("unchanged: got version %d (%v), want %d", again.Version, err, v1.Version)
	}
	h.write(filepath.Join(filepath.Dir(entry), "lib", "rates.json"), `{ "eur": 3 }`)
	v2, err := h.loadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	if v2.Version != v1.Version+1 || v2.Hash == v1.Hash {
		t.Errorf("changed import: got version %d hash %s, want %d and a new hash", v2.Version, v2.Hash, v1.Version+1)
	}
}

// TestModulesSingleFileUnchanged: a workflow that imports nothing is stored as its own
// text, with the hash it always had, and a manifest of one file.
func TestModulesSingleFileUnchanged(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(h.dir, "orders.js")
	h.write(path, orders)
	v, err := h.loadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(v.Source) != orders || v.Hash != hashOf(orders) {
		t.Errorf("stored source differs from the file, or its hash does")
	}
	if len(v.Manifest) != 1 || v.Manifest[0].Path != "orders.js" || v.Manifest[0].SHA256 != hashOf(orders) {
		t.Errorf("manifest: got %+v", v.Manifest)
	}
}

// TestModulesErrorsLocated: an error thrown by an imported module at run time names
// that module's file, line and column; a module that does not load stores nothing.
func TestModulesErrorsLocated(t *testing.T) {
	h := newHarness(t)
	entry := h.copyProject(map[string]string{
		"workflow.ts": `import { boom } from './lib/boom';
export default {
  topics: ['orders'],
  consumers: { c: { subscribe: ['orders'], prepare() { return boom(); } } },
};
`,
		"lib/boom.ts": "export function boom(): never {\n  throw new TypeError('boom here');\n}\n",
	})
	if _, err := h.loadFile(entry); err != nil {
		t.Fatal(err)
	}
	h.publish("project", "orders", "a")
	h.runOnce("project")
	runs := h.runs("project")
	if len(runs) != 1 || !strings.Contains(runs[0].Error, "lib/boom.ts:2:9") {
		t.Fatalf("runs: got %+v, want an error at lib/boom.ts:2:9", runs)
	}

	h2 := newHarness(t)
	entry = h2.copyProject(map[string]string{
		"workflow.ts": "import { x } from './lib/bad';\nexport default { topics: ['t'], consumers: { c: { subscribe: ['t'], prepare() { return x; } } } };\n",
		"lib/bad.ts":  "export const x = 1;\nexport const y = ;\n",
	})
	_, err := h2.loadFile(entry)
	var se *scripthost.Error
	if !errors.As(err, &se) || se.File != "lib/bad.ts" || se.Line != 2 {
		t.Fatalf("got %v, want a syntax error at lib/bad.ts:2", err)
	}
	if _, err := h2.rt.Validate(h2.ctx, entry, nil); !errors.As(err, &se) || se.File != "lib/bad.ts" {
		t.Errorf("Validate: got %v, want the same error", err)
	}
	if wfs, _ := h2.store.Workflows(h2.ctx); len(wfs) != 0 {
		t.Errorf("workflows stored: got %v, want none", wfs)
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestModulesRunContinuesAfterRestart: a run of a bundled workflow paused by a network
// error (in prepare) continues after the project is deleted and the process restarted, with the
// imported modules' code from the stored version.
func TestModulesRunContinuesAfterRestart(t *testing.T) {
	h := newHarness(t)
	entry := h.copyProject(map[string]string{"workflow.ts": `import { total } from './lib/money';
import { greet } from 'greet';
export default {
  topics: ['orders'],
  consumers: {
    c: {
      subscribe: ['orders'],
      async prepare() {
        await Svc.read({});
        const e = await Topics.peek({ topic: 'orders' });
        return { reservations: [{ topic: 'orders', ids: [e[0].id] }], data: null };
      },
      async mutate() { await Svc.apply({ value: greet('' + total([1, 2])) }); },
    },
  },
};
`})
	if _, err := h.loadFile(entry); err != nil {
		t.Fatal(err)
	}
	h.publish("project", "orders", "a")
	h.svc.fail = scripthost.Errorf(scripthost.ClassNetwork, "", "connection refused")
	h.runOnce("project")
	if runs := h.runs("project"); len(runs) != 1 || runs[0].Status != scripthost.StatusPausedTransient {
		t.Fatalf("runs: got %+v, want one paused:transient", runs)
	}

	if err := os.RemoveAll(filepath.Dir(entry)); err != nil {
		t.Fatal(err)
	}
	h.restart()
	h.svc.fail = nil
	h.clock.Add(2 * time.Second)
	h.runOnce("project")
	runs := h.runs("project")
	if len(runs) != 2 || runs[1].Status != scripthost.StatusCommitted {
		t.Fatalf("after restart: got %+v, want the retry committed", runs)
	}
	if h.svc.count() != 1 || string(h.svc.applied[0]) != `{"value":"hello 6"}` {
		t.Errorf("applied: got %s, want one {\"value\":\"hello 6\"}", h.svc.applied)
	}
}
