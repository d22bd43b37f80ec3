package runtime_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/benchrun"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// counted is a runtime on a PostgreSQL server of the test's own, whose statement
// counts the test reads (pg_stat_statements), with workflow name loaded from src and
// the Counter.add tool counting its calls.
type counted struct {
	url   string
	st    *postgres.Store
	rt    *runtime.Runtime
	calls *atomic.Int64
}

func newCounted(ctx context.Context, t *testing.T, name string, src []byte) counted {
	t.Helper()
	c := counted{url: pgtest.NewServer(t).URL(t), calls: new(atomic.Int64)}
	st, err := postgres.Open(ctx, c.url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(benchrun.CounterTool(c.calls)); err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.WithoutCancel(ctx)) })
	if _, err := rt.LoadWorkflow(ctx, name, name+".js", src); err != nil {
		t.Fatal(err)
	}
	c.st, c.rt = st, rt
	return c
}

// runMetered runs the workflows once (the events published before) with the server's meter on
// and returns what the server counted, after checking that it counts statements, that
// every event was consumed by one committed run and that the tool ran once per run.
func (c counted) runMetered(ctx context.Context, t *testing.T, workflows []string, runs int) pgtest.Counts {
	t.Helper()
	meter := pgtest.StartMeter(t, c.url)
	if err := c.rt.RunOnce(ctx, workflows); err != nil {
		t.Fatal(err)
	}
	n := meter.Stop(t)
	if n.Statements < 0 {
		t.Fatal("the server does not count statements: pg_stat_statements is not loaded")
	}
	benchrun.CheckRuns(t, c.st, runs)
	if got := c.calls.Load(); got != int64(runs) {
		t.Fatalf("%d mutations made for %d runs", got, runs)
	}
	return n
}
