package sqlite

import (
	"context"
	"reflect"
	"testing"

	"github.com/scripthost/scripthost/ledger"
)

// TestMigration9WorkflowManifest opens a ledger at schema version 8 holding a workflow
// version: migration 9 adds the manifest column, the old version reads back unchanged
// with no manifest, and a new version stores its manifest and reads it back.
func TestMigration9WorkflowManifest(t *testing.T) {
	ctx := context.Background()
	s := migratedFrom(t, 8,
		`INSERT INTO workflows (name, latest_version, paused, created_at) VALUES ('wf', 1, 0, 1)`,
		`INSERT INTO workflow_versions (workflow, version, language, path, source, hash, definition, created_at)
			VALUES ('wf', 1, 'js', '/p/wf.js', 'export default {}', 'h1', '{"topics":["t"]}', 5)`,
	)
	old, err := s.WorkflowVersion(ctx, "wf", 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(old.Source) != "export default {}" || old.Hash != "h1" || old.Path != "/p/wf.js" || string(old.Definition) != `{"topics":["t"]}` || old.Manifest != nil {
		t.Errorf("old version: got %+v", old)
	}
	manifest := []ledger.SourceFile{{Path: "lib/a.ts", SHA256: "ab", Size: 3}, {Path: "wf.js", SHA256: "cd", Size: 4}}
	if _, err := s.PutWorkflow(ctx, ledger.WorkflowVersion{Workflow: "wf", Language: "js", Path: "/p/wf.js",
		Source: []byte("bundle"), Definition: []byte(`{}`), Manifest: manifest}); err != nil {
		t.Fatal(err)
	}
	v, err := s.WorkflowVersion(ctx, "wf", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != 2 || !reflect.DeepEqual(v.Manifest, manifest) {
		t.Errorf("new version: got %d %+v, want 2 %+v", v.Version, v.Manifest, manifest)
	}
}
