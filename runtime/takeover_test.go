package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// TestTakeoverIsLogged: a host that claims a workflow whose lease another host let
// expire (it died) says so, naming the workflow and both hosts.
func TestTakeoverIsLogged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.URL(t)
	st, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var logs bytes.Buffer
	rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})},
		Tools: hostfuncs.NewRegistry(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Lease: runtime.LeaseOptions{Owner: "host-b", TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	src := `export default { topics: ['t'], consumers: { c: { subscribe: ['t'],
  async prepare() { return null; }, async mutate() {}, next() { return {}; } } } };`
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", []byte(src)); err != nil {
		t.Fatal(err)
	}
	// host-a held the lease and died: its lease of 1ms is not renewed.
	if _, ok, err := st.ClaimLease(ctx, "w", "host-a", time.Millisecond); err != nil || !ok {
		t.Fatalf("claim by host-a: ok=%v err=%v", ok, err)
	}
	for !strings.Contains(logs.String(), "lease taken over") {
		if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
			t.Fatalf("no takeover line before: %v\n%s", err, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `level=WARN msg="lease taken over: its holder stopped renewing it" workflow=w from=host-a owner=host-b`) {
		t.Errorf("log: %s", logs.String())
	}
}
