package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/benchrun"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

// leaseHost opens a host on the shared ledger at url, leasing as owner with ttl, with
// the workflow w loaded (a consumer of topic "in" counting its runs in counted).
func leaseHost(t *testing.T, url, owner string, ttl time.Duration, counted *atomic.Int64) (*postgres.Store, *runtime.Runtime) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(benchrun.CounterTool(counted)); err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{Store: st, Engines: map[string]sandbox.Engine{"js": js.New(js.Options{})}, Tools: reg,
		Lease: runtime.LeaseOptions{Owner: owner, TTL: ttl}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	if _, err := rt.LoadWorkflow(ctx, "w", "w.js", benchrun.Source(benchrun.Count)); err != nil {
		t.Fatal(err)
	}
	return st, rt
}

func publishIn(t *testing.T, st ledger.Store, from, n int) {
	t.Helper()
	var evs []ledger.NewEvent
	for i := range n {
		evs = append(evs, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: fmt.Sprintf("e%d", from+i), Payload: json.RawMessage(`{}`)})
	}
	if _, err := st.Publish(context.Background(), evs...); err != nil {
		t.Fatal(err)
	}
}

func leaseOf(t *testing.T, st *postgres.Store, workflow string) ledger.Lease {
	t.Helper()
	ls, err := st.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Workflow == workflow {
			return l
		}
	}
	t.Fatalf("no lease of %s in %+v", workflow, ls)
	return ledger.Lease{}
}

// TestLeaseKeptAcrossPasses: a host's loop claims a workflow's lease once and keeps it
// for as long as the workflow has work, pass after pass (more events than one pass
// runs), and gives it back once a pass finds nothing to do.
func TestLeaseKeptAcrossPasses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.URL(t)
	var counted atomic.Int64
	st, rt := leaseHost(t, url, "host-a", time.Minute, &counted)
	const events = 40 // more than the 16 consumer rounds of a pass
	publishIn(t, st, 0, events)
	if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	if counted.Load() != events {
		t.Fatalf("%d runs, want %d", counted.Load(), events)
	}
	l := leaseOf(t, st, "w")
	if l.Token != 1 {
		t.Errorf("lease claimed %d times, want once for all of the workflow's passes", l.Token)
	}
	if l.Owner != "" {
		t.Errorf("lease held by %q after the workflow ran out of work, want it given back", l.Owner)
	}
}

// TestLeaseHandedToHostWithoutWork: a host with no lease of its own that asks for a
// workflow's lease gets it while the holder still has work: the holder sees the
// request at its next renewal and hands the lease over after its pass, so that a
// workflow that never runs out of work does not stay with one host.
func TestLeaseHandedToHostWithoutWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.URL(t)
	var counted atomic.Int64
	st, rt := leaseHost(t, url, "host-a", 400*time.Millisecond, &counted)
	other, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	publishIn(t, st, 0, 20)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- rt.RunUntil(ctx, stop, []string{"w"}, 10*time.Millisecond) }()
	// Keep the workflow busy until host-b has had the lease.
	var got ledger.Lease
	for n := 20; ; n++ {
		publishIn(t, st, n, 1)
		l, ok, err := other.ClaimLease(ctx, "w", "host-b", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = l
			break
		}
		if err := other.AskLease(ctx, "w", "host-b"); err != nil {
			t.Fatal(err)
		}
		if ctx.Err() != nil {
			t.Fatal("host-b never got the lease of a workflow host-a kept busy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := other.ReleaseLease(ctx, got); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got.TakenFrom != "" {
		t.Errorf("host-b took the lease over from %q, want it handed over (released), not expired", got.TakenFrom)
	}
}

// TestRunOnceEndsOnAnotherHostsIdlePass: a host's RunOnce ends for a workflow without
// claiming its lease when another host gave the lease back after a pass that found
// nothing to do, under a claim made after the RunOnce began; a lease given back
// otherwise, or idle under a claim older than the RunOnce, is claimed for a pass of
// its own.
func TestRunOnceEndsOnAnotherHostsIdlePass(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.URL(t)
	var counted atomic.Int64
	st, rt := leaseHost(t, url, "host-a", time.Minute, &counted)
	other, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	claimB := func() ledger.Lease {
		t.Helper()
		l, ok, err := other.ClaimLease(ctx, "w", "host-b", time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim by host-b: ok=%v err=%v", ok, err)
		}
		return l
	}
	// runOnce runs host-a's RunOnce while host-b holds the lease, and, once host-a
	// asked for it (its loop has begun), lets host-b claim it again and give it back,
	// idle or not. It returns the lease's claims when the RunOnce has ended.
	runOnce := func(idle bool) int64 {
		t.Helper()
		claimB()
		done := make(chan error, 1)
		go func() { done <- rt.RunOnce(ctx, []string{"w"}) }()
		for !leaseOf(t, st, "w").Wanted {
			if ctx.Err() != nil {
				t.Fatal("host-a never asked for the lease")
			}
			time.Sleep(10 * time.Millisecond)
		}
		l := claimB()
		l.Idle = idle
		if _, err := other.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return leaseOf(t, st, "w").Token
	}
	if got := runOnce(true); got != 2 {
		t.Errorf("after host-b's idle pass: lease claimed %d times, want 2 (host-b's), host-a's RunOnce ending without a claim", got)
	}
	if got := runOnce(false); got != 5 {
		t.Errorf("after host-b gave the lease back not idle: lease claimed %d times, want 5 (host-a's pass after host-b's two claims)", got)
	}
	idle := leaseOf(t, st, "w")
	if !idle.Idle || idle.Owner != "" {
		t.Fatalf("lease after host-a's idle pass: got %+v, want free and idle", idle)
	}
	// Idle under a claim made before the RunOnce began: host-a claims it for a pass.
	if err := rt.RunOnce(ctx, []string{"w"}); err != nil {
		t.Fatal(err)
	}
	if got := leaseOf(t, st, "w").Token; got != idle.Token+1 {
		t.Errorf("RunOnce after an idle pass older than it: lease claimed %d times, want %d (a pass of its own)", got, idle.Token+1)
	}
	if counted.Load() != 0 {
		t.Errorf("%d runs of a workflow without events", counted.Load())
	}
}

// TestLeaselessHostAsksForOneLease: a host holding no lease asks for one workflow's
// lease held elsewhere at a time, not for all of them at once: each lease asked for
// is handed over after its holder's round, so asking for all would take every busy
// workflow from its host.
func TestLeaselessHostAsksForOneLease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.URL(t)
	var counted atomic.Int64
	st, rt := leaseHost(t, url, "host-a", time.Minute, &counted)
	if _, err := rt.LoadWorkflow(ctx, "w2", "w2.js", benchrun.Source(benchrun.Count)); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, wf := range []string{"w", "w2"} {
		if _, ok, err := other.ClaimLease(ctx, wf, "host-b", time.Minute); err != nil || !ok {
			t.Fatalf("claim of %s by host-b: ok=%v err=%v", wf, ok, err)
		}
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- rt.RunUntil(ctx, stop, []string{"w", "w2"}, 10*time.Millisecond) }()
	wanted := func() int {
		n := 0
		for _, wf := range []string{"w", "w2"} {
			if leaseOf(t, st, wf).Wanted {
				n++
			}
		}
		return n
	}
	for wanted() == 0 {
		if ctx.Err() != nil {
			t.Fatal("host-a never asked for a lease")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Many polls of both workflows later, still one asked for.
	for range 30 {
		if n := wanted(); n != 1 {
			t.Fatalf("host-a asked for %d leases at once, want 1", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestHostWithWorkDoesNotAsk: a host that holds a lease of its own has work, so when
// its view of the leases is stale (another host claimed a workflow since the view was
// read) and its claim is refused, it does not ask for that workflow's lease: asking
// would take a busy workflow from its holder for a host that is busy too. Once the
// host holds no lease (and has held none for the share yield), the same refusal asks.
func TestHostWithWorkDoesNotAsk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	url := pgtest.URL(t)
	var counted atomic.Int64
	const ttl = 2 * time.Second // share yield 500ms
	st, rt := leaseHost(t, url, "host-a", ttl, &counted)
	if _, err := rt.LoadWorkflow(ctx, "w2", "w2.js", benchrun.Source(benchrun.Count)); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	time.Sleep(600 * time.Millisecond) // leaseless for longer than the share yield

	release, held, err := rt.HoldLease(ctx, "w") // the host's view is read here: w2 free
	if err != nil || !held {
		t.Fatalf("host-a's hold of w: held=%v err=%v", held, err)
	}
	if _, ok, err := other.ClaimLease(ctx, "w2", "host-b", time.Minute); err != nil || !ok {
		t.Fatalf("claim of w2 by host-b: ok=%v err=%v", ok, err)
	}
	if _, held, err := rt.HoldLease(ctx, "w2"); err != nil || held {
		t.Fatalf("host-a's hold of w2, held by host-b: held=%v err=%v", held, err)
	}
	if leaseOf(t, st, "w2").Wanted {
		t.Fatal("host-a, holding w's lease, asked for w2's")
	}

	release() // no lease held now: after the share yield, a refused claim asks
	time.Sleep(600 * time.Millisecond)
	if _, held, err := rt.HoldLease(ctx, "w2"); err != nil || held {
		t.Fatalf("host-a's second hold of w2: held=%v err=%v", held, err)
	}
	if !leaseOf(t, st, "w2").Wanted {
		t.Fatal("host-a, holding no lease, did not ask for w2's")
	}
}
