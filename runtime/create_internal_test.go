package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// TestBeginWithoutHandler: a run begun for a handler its version lacks, or for a
// version that cannot be loaded, is written pending (kind:created, and nothing passed
// yet), then driven as any written run: the missing handler fails it, the version's
// error is returned.
func TestBeginWithoutHandler(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var failpoints []string
	rt, err := New(Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})},
		Tools: hostfuncs.NewRegistry(), Limits: sandbox.Limits{Timeout: 2 * time.Second},
		Failpoint: func(name string) { failpoints = append(failpoints, name) }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'], prepare() { return null } } } }`
	path := filepath.Join(dir, "wf.js")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.LoadWorkflow(ctx, "wf", path, []byte(src)); err != nil {
		t.Fatal(err)
	}

	run, err := rt.begin(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "gone", Kind: scripthost.KindConsumer,
		InputState: json.RawMessage(`{}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase != scripthost.RunPending || got.Status != scripthost.StatusFailedLogic || !strings.Contains(got.Error, "handler gone no longer exists") {
		t.Errorf("run of a missing handler: %s/%s %q, want pending/failed:logic, handler gone no longer exists", got.Phase, got.Status, got.Error)
	}
	if want := []string{"consumer:created"}; !slices.Equal(failpoints, want) {
		t.Errorf("failpoints %v, want %v", failpoints, want)
	}

	failpoints = nil
	_, err = rt.begin(ctx, ledger.NewRun{Workflow: "wf", Version: 7, Handler: "c", Kind: scripthost.KindConsumer}, nil)
	if err == nil || !strings.Contains(err.Error(), "workflow wf version 7") {
		t.Errorf("run of a version not stored: err %v, want one naming workflow wf version 7", err)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{Workflow: "wf", Handler: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Version != 7 || runs[0].Phase != scripthost.RunPending || runs[0].Status != scripthost.StatusActive {
		t.Errorf("runs of c: %+v, want one pending and active at version 7", runs)
	}
	if want := []string{"consumer:created"}; !slices.Equal(failpoints, want) {
		t.Errorf("failpoints %v, want %v", failpoints, want)
	}
}
