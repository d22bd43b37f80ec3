package observe

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// readCounting is a ledger whose lifecycle reads are counted.
type readCounting struct {
	*sqlite.Store
	reads int
}

func (r *readCounting) LifecycleEvents(ctx context.Context, f ledger.LifecycleFilter) ([]ledger.LifecycleEvent, error) {
	r.reads++
	return r.Store.LifecycleEvents(ctx, f)
}

// TestFollowStartsAtLogEnd: the metrics start at the end of a ledger's lifecycle log
// without reading the log (a large ledger's log took a read per thousand entries), and
// count what is appended after.
func TestFollowStartsAtLogEnd(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	create := func(id string, evs int) {
		t.Helper()
		var log []ledger.LifecycleEvent
		for range evs {
			log = append(log, ledger.NewPhaseEvent(scripthost.Run{ID: id}, ledger.EventPhaseStarted, string(scripthost.PhasePrepare)))
		}
		if _, err := st.CreateRun(ledger.WithEvents(ctx, log...), ledger.NewRun{ID: id, Workflow: "w", Handler: "h",
			Kind: scripthost.KindConsumer}); err != nil {
			t.Fatal(err)
		}
	}
	create("before", 2500)
	store := &readCounting{Store: st}
	f := &follower{logger: slog.New(slog.NewTextHandler(io.Discard, nil)), m: newMetrics(prometheus.NewRegistry(), func() float64 { return 0 }),
		runs: map[string]scripthost.Run{}}
	if err := f.start(ctx, store); err != nil {
		t.Fatal(err)
	}
	last, err := st.LastLifecycleSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if store.reads != 0 || f.after != last || last < 2500 {
		t.Fatalf("start read the log %d times and starts after %d, want no read and after %d", store.reads, f.after, last)
	}
	create("after", 1)
	if err := f.poll(ctx); err != nil {
		t.Fatal(err)
	}
	if last, err = st.LastLifecycleSeq(ctx); err != nil {
		t.Fatal(err)
	}
	if _, counted := f.runs["after"]; !counted || f.after != last {
		t.Errorf("after a poll: run counted %v, after %d; want the new run counted and after %d", counted, f.after, last)
	}
	if _, counted := f.runs["before"]; counted {
		t.Error("the run logged before the start was counted")
	}
}
