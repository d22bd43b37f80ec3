package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// modulesProject writes a workflow of two modules and a package under dir.
func modulesProject(t *testing.T, dir string) string {
	t.Helper()
	putFile(t, filepath.Join(dir, "lib", "names.js"), "import t from './topics.json';\nexport const topics = t.list;\n")
	putFile(t, filepath.Join(dir, "lib", "topics.json"), `{"list": ["a"]}`)
	putFile(t, filepath.Join(dir, "node_modules", "shout", "package.json"), `{"name": "shout", "exports": {".": "./index.js"}}`)
	putFile(t, filepath.Join(dir, "node_modules", "shout", "index.js"), "export default (s) => s.toUpperCase();\n")
	return putFile(t, filepath.Join(dir, "workflow.js"), `import { topics } from './lib/names.js';
import shout from 'shout';
export default { topics, consumers: { c: { subscribe: ['a'], prepare() { return { data: shout('x') }; } } } };
`)
}

// TestValidateModules: validate bundles a workflow's imports as a load does: a
// workflow of modules and a package validates, a computed require and a Node
// built-in are refused naming the file and line.
func TestValidateModules(t *testing.T) {
	dir := t.TempDir()
	wf := modulesProject(t, dir)
	if code, stdout, stderr := runCLI(t, "validate", wf); code != 0 || !strings.Contains(stdout, "consumer c (on a)") {
		t.Fatalf("validate: got %d %q %q", code, stdout, stderr)
	}
	putFile(t, filepath.Join(dir, "lib", "names.js"), "const which = './topics.json';\nexport const topics = require(which).list;\n")
	if code, _, stderr := runCLI(t, "validate", wf); code == 0 || !strings.Contains(stderr, "lib/names.js:2:23") || !strings.Contains(stderr, "string literal") {
		t.Errorf("computed require: got %d %q, want a refusal at lib/names.js:2:23", code, stderr)
	}
	putFile(t, filepath.Join(dir, "lib", "names.js"), "import { readFileSync } from 'node:fs';\nexport const topics = [String(readFileSync)];\n")
	if code, _, stderr := runCLI(t, "validate", wf); code == 0 || !strings.Contains(stderr, "lib/names.js:1:30") || !strings.Contains(stderr, "Node built-in") {
		t.Errorf("built-in: got %d %q, want a refusal at lib/names.js:1:30", code, stderr)
	}
}

// TestShowWorkflowManifest: show WORKFLOW lists the files the stored version was
// built from with their hashes, as text and as JSON.
func TestShowWorkflowManifest(t *testing.T) {
	dir := t.TempDir()
	wf := modulesProject(t, filepath.Join(dir, "proj"))
	db := filepath.Join(dir, "ledger.db")
	if code, _, stderr := runCLI(t, "--db", db, "run", wf, "--once"); code != 0 {
		t.Fatalf("run: %d %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "--db", db, "show", "proj")
	if code != 0 {
		t.Fatalf("show: %d %s", code, stderr)
	}
	for _, want := range []string{"workflow proj version 1", "lib/names.js", "lib/topics.json", "node_modules/shout/ (1 file)", "workflow.js"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("show: %q missing from\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "--db", db, "show", "proj", "--json")
	if code != 0 {
		t.Fatalf("show --json: %d %s", code, stderr)
	}
	var d struct {
		Version  int `json:"version"`
		Manifest []struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		} `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || d.Version != 1 || len(d.Manifest) != 4 {
		t.Fatalf("show --json: got %+v (%v) from %s, want version 1 with 4 files", d, err, stdout)
	}
	for _, f := range d.Manifest {
		if len(f.SHA256) != 64 || f.Size == 0 {
			t.Errorf("manifest entry %+v: want a SHA-256 and a size", f)
		}
	}
	if code, _, stderr := runCLI(t, "--db", db, "show", "nope"); code != exitRefused {
		t.Errorf("show unknown: got %d %q, want %d", code, stderr, exitRefused)
	}
}
