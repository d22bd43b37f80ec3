package observe_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/observe"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// TestPhasesRunning: a consumer run is not in the ledger while its prepare phase runs
// (it is first written at its mutation's in-flight record), and the phases-running
// gauge is where an operator sees it: 1 for the prepare phase while it waits, 0 once
// it has ended.
func TestPhasesRunning(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(
		&hostfuncs.Tool{Namespace: "Slow", Method: "look", Operation: scripthost.OpRead,
			Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				close(entered)
				<-release
				return json.RawMessage(`1`), nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "apply",
			Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }},
	); err != nil {
		t.Fatal(err)
	}
	o := observe.New(observe.Options{})
	rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})},
		Tools: reg, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() { await Slow.look({}); return { reservations: [{ topic: 't', ids: ['e'] }] }; },
  async mutate() { await Svc.apply({}); }, next() { return {}; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "t", MessageID: "e", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.RunOnce(ctx, []string{"w"}) }()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the prepare phase never called its tool")
	}
	const gauge = `scripthost_phases_running{handler="c",phase="prepare",workflow="w"}`
	if got := scrape(t, o, gauge); got != "1" {
		t.Errorf("while prepare runs: %s is %q, want 1", gauge, got)
	}
	if runs, err := st.Runs(ctx, ledger.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("while prepare runs: %d runs in the ledger (%v), want none yet", len(runs), err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := scrape(t, o, gauge); got != "0" {
		t.Errorf("after the run: %s is %q, want 0", gauge, got)
	}
	runs, err := st.Runs(ctx, ledger.RunFilter{})
	if err != nil || len(runs) != 1 || runs[0].Status != scripthost.StatusCommitted {
		t.Errorf("after the run: runs %+v (%v), want one committed", runs, err)
	}
}

// scrape returns the value of the series named by series on o's metrics page.
func scrape(t *testing.T, o *observe.Observer, series string) string {
	t.Helper()
	w := httptest.NewRecorder()
	o.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.SplitSeq(w.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}
