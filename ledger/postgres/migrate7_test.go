package postgres_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestMigrateWorkflowManifest: a ledger at schema version 6 keeps its workflow versions
// readable (no manifest) once migration 7 adds the manifest column, and a new version
// stores its manifest.
func TestMigrateWorkflowManifest(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	migrateTo(t, url, "mig7", 6,
		`INSERT INTO workflows (name, latest_version, paused, created_at) VALUES ('wf', 1, false, 1)`,
		`INSERT INTO workflow_versions (workflow, version, language, path, source, hash, definition, created_at)
			VALUES ('wf', 1, 'js', '/p/wf.js', 'export default {}', 'h1', '{"topics":["t"]}', 5)`)
	s := open(t, url, postgres.Options{Schema: "mig7"})
	old, err := s.WorkflowVersion(ctx, "wf", 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(old.Source) != "export default {}" || old.Hash != "h1" || string(old.Definition) != `{"topics":["t"]}` || old.Manifest != nil {
		t.Errorf("old version: got %+v", old)
	}
	manifest := []ledger.SourceFile{{Path: "lib/a.ts", SHA256: "ab", Size: 3}}
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
