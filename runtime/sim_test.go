package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
)

var (
	simSeeds = flag.Int("sim.seeds", 30, "seeds TestSimulate runs (make soak: many more)")
	simSeed  = flag.Uint64("sim.seed", 0, "run only this seed of TestSimulate (replay)")
	simFirst = flag.Uint64("sim.first", 1, "first seed of TestSimulate")
)

// simWorkflow consumes "in" one event at a time, applies it to the service, and
// publishes it on "out" from next once it was applied; d only listens to "out".
const simWorkflow = `export default {
  topics: ['in', 'out'],
  consumers: { c: {
    subscribe: ['in'], publishes: ['out'],
    async prepare() {
      const [ev] = await Topics.peek({ topic: 'in', limit: 1 })
      if (!ev) return null
      return { reservations: [{ topic: 'in', ids: [ev.id] }], data: { id: ev.id } }
    },
    async mutate(d) { if (d) await Svc.apply({ value: d.id }) },
    async next(d, r) {
      if (d && r.status === 'applied') await Topics.publish({ topic: 'out', id: d.id, payload: { id: d.id } })
    },
  },
  d: { subscribe: ['out'], prepare() { return null } } },
}`

// simStats counts what the fault model did, over all seeds.
var simStats struct{ crashes, uncertain, reconciles atomic.Int64 }

// errCrash marks a pass that ended in a simulated process death.
var errCrash = errors.New("simulated crash")

// simWorld is the outside world of one seed: the service and the fault model.
type simWorld struct {
	mu      sync.Mutex
	rng     *rand.Rand
	faults  bool
	applied map[string]int // by event id
	keys    map[string]int // by idempotency key
	// crashOnOutcome makes the next outcome write of the ledger crash the process
	// (the service applied, the process died before recording it).
	crashOnOutcome bool
	crashed        bool
}

// die ends the calling goroutine as a process death would end the process.
func (w *simWorld) die() {
	w.mu.Lock()
	w.crashed = true
	w.mu.Unlock()
	simStats.crashes.Add(1)
	goruntime.Goexit()
}

func (w *simWorld) roll(p float64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.faults && w.rng.Float64() < p
}

func (w *simWorld) tool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: "Svc", Method: "apply",
		InputSchema: json.RawMessage(`{"type":"object","required":["value"],"properties":{"value":{"type":"string"}}}`),
	}
	t.Execute = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var req struct{ Value string }
		_ = json.Unmarshal(in, &req)
		key := hostfuncs.IdempotencyKey(ctx)
		w.mu.Lock()
		defer w.mu.Unlock()
		outcome := 0
		if w.faults {
			outcome = w.rng.IntN(7)
		}
		apply := func() {
			// The service honours idempotency keys, as the HTTP tools' services do.
			if w.keys[key] == 0 {
				w.applied[req.Value]++
			}
			w.keys[key]++
		}
		if outcome >= 2 && outcome <= 5 {
			simStats.uncertain.Add(1)
		}
		switch outcome {
		case 1: // definite failure, nothing applied
			return nil, scripthost.Errorf(scripthost.ClassLogic, "declined", "declined")
		case 2: // timeout before the service applied
			return nil, errors.New("timeout")
		case 3: // timeout after it applied
			apply()
			return nil, errors.New("timeout")
		case 4: // dropped connection after it applied
			apply()
			return nil, errors.New("connection reset")
		case 5: // applied, then the process dies before recording it
			apply()
			w.crashOnOutcome = true
			return json.RawMessage(`{"ok":true}`), nil
		}
		apply()
		return json.RawMessage(`{"ok":true}`), nil
	}
	t.Reconcile = func(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		simStats.reconciles.Add(1)
		if w.faults {
			switch w.rng.IntN(4) {
			case 0:
				return scripthost.Reconciliation{}, errors.New("reconcile: service error")
			case 1:
				return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "slow"}, nil
			}
		}
		if w.keys[m.IdempotencyKey] > 0 {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: json.RawMessage(`{"ok":true}`)}, nil
		}
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "404"}, nil
	}
	return t
}

// crashStore crashes the process at an outcome write when the world asks for it.
type crashStore struct {
	ledger.Store
	w *simWorld
}

func (s crashStore) maybeCrash() {
	s.w.mu.Lock()
	c := s.w.crashOnOutcome
	s.w.crashOnOutcome = false
	s.w.mu.Unlock()
	if c {
		s.w.die()
	}
}

func (s crashStore) ApplyMutation(ctx context.Context, id string, res json.RawMessage) (scripthost.Mutation, error) {
	s.maybeCrash()
	return s.Store.ApplyMutation(ctx, id, res)
}

// TestSimulate drives the real state machine and the real SQLite ledger through many
// seeded runs while the fault model picks every tool and reconcile outcome and crashes
// the process at every failpoint; a crash is a restart (a fresh runtime on the same
// ledger). After each seed the invariants must hold. A failing seed prints the command
// that replays it.
func TestSimulate(t *testing.T) {
	first, n := *simFirst, uint64(*simSeeds)
	if *simSeed != 0 {
		first, n = *simSeed, 1
	}
	if testing.Short() {
		n = min(n, 5)
	}
	// The ledger's fsyncs are not what is simulated: keep the files in memory when the
	// machine has /dev/shm.
	base := ""
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() {
		base = "/dev/shm"
	}
	// Seeds are independent: run them on every core. The smallest failing seed is
	// reported.
	var (
		next     atomic.Uint64
		mu       sync.Mutex
		failSeed uint64
		failErr  error
		wg       sync.WaitGroup
	)
	next.Store(first)
	for range goruntime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				seed := next.Add(1) - 1
				if seed >= first+n {
					return
				}
				dir, err := os.MkdirTemp(base, "scripthost-sim-")
				if err == nil {
					err = simulate(dir, seed)
					os.RemoveAll(dir)
				}
				if err != nil {
					mu.Lock()
					if failErr == nil || seed < failSeed {
						failSeed, failErr = seed, err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if failErr != nil {
		t.Fatalf("seed %d: %v\nreplay: go test ./runtime -run '^TestSimulate$' -v -args -sim.seed=%d", failSeed, failErr, failSeed)
	}
	t.Logf("seeds %d..%d: invariants held; %d crashes, %d uncertain tool outcomes, %d reconciles", first, first+n-1,
		simStats.crashes.Load(), simStats.uncertain.Load(), simStats.reconciles.Load())
}

func simulate(dir string, seed uint64) (err error) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	w := &simWorld{rng: rand.New(rand.NewPCG(seed, 1)), faults: true, applied: map[string]int{}, keys: map[string]int{}}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var clockMu sync.Mutex
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	advance := func(d time.Duration) { clockMu.Lock(); now = now.Add(d); clockMu.Unlock() }
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(w.tool()); err != nil {
		return err
	}
	db := filepath.Join(dir, "ledger.db")
	src := filepath.Join(dir, "sim.js")
	if err := os.WriteFile(src, []byte(simWorkflow), 0o644); err != nil {
		return err
	}
	crashP := 0.05 + rng.Float64()*0.15

	var store *sqlite.Store
	var rt *runtime.Runtime
	open := func() error {
		s, err := sqlite.Open(ctx, db, sqlite.Options{Clock: clock})
		if err != nil {
			return err
		}
		eng := js.New(js.Options{})
		r, err := runtime.New(runtime.Config{
			Store: crashStore{s, w}, Engines: map[string]sandbox.Engine{"js": eng}, Tools: reg, Clock: clock,
			Limits:    sandbox.Limits{Timeout: 10 * time.Second},
			Reconcile: hostfuncs.ReconcilePolicy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute},
			Failpoint: func(name string) {
				if w.roll(crashP) {
					w.die()
				}
			},
		})
		if err != nil {
			s.Close()
			return err
		}
		store, rt = s, r
		return nil
	}
	restart := func() error {
		if rt != nil {
			rt.Close(ctx)
		}
		if store != nil {
			store.Close()
		}
		return open()
	}
	// pass runs the workflow once; a crash restarts the process. A crash ends the
	// goroutine it happens on (runtime.Goexit: nothing after it runs, as in a killed
	// process), wherever the runtime runs it.
	pass := func() error {
		ch := make(chan error, 1)
		go func() {
			crashed := true
			defer func() {
				if crashed {
					ch <- errCrash
				}
			}()
			err := rt.RunOnce(ctx, []string{"sim"})
			crashed = false
			ch <- err
		}()
		err := <-ch
		w.mu.Lock()
		crashed := w.crashed || errors.Is(err, errCrash)
		w.crashed, w.crashOnOutcome = false, false
		w.mu.Unlock()
		if crashed {
			return restart()
		}
		return err
	}
	if err := open(); err != nil {
		return err
	}
	defer func() {
		rt.Close(ctx)
		store.Close()
	}()
	if _, err := rt.LoadWorkflow(ctx, "sim", src, []byte(simWorkflow)); err != nil {
		return err
	}
	events := 1 + rng.IntN(6)
	for i := range events {
		if _, err := store.Publish(ctx, ledger.NewEvent{Workflow: "sim", Topic: "in", MessageID: fmt.Sprintf("e%d", i), Payload: json.RawMessage(`{}`)}); err != nil {
			return err
		}
	}
	for range 4 + rng.IntN(10) {
		if err := pass(); err != nil && !isRunError(err) {
			return err
		}
		advance(time.Duration(rng.IntN(120)) * time.Second)
	}
	// Calm: no more faults; restart once more and let retries and reconciles settle.
	w.mu.Lock()
	w.faults = false
	w.mu.Unlock()
	if err := restart(); err != nil {
		return err
	}
	for range 5 {
		if err := pass(); err != nil && !isRunError(err) {
			return err
		}
		advance(10 * time.Minute)
	}
	return checkInvariants(ctx, store, w)
}

// isRunError reports a pass that failed because a run did (its error is in the
// ledger), not the simulation.
func isRunError(err error) bool {
	var se *scripthost.Error
	return errors.As(err, &se)
}

func checkInvariants(ctx context.Context, store ledger.Store, w *simWorld) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, n := range w.applied {
		if n > 1 {
			return fmt.Errorf("event %s applied %d times by the service", id, n)
		}
	}
	muts, err := store.Mutations(ctx, ledger.MutationFilter{Workflow: "sim"})
	if err != nil {
		return err
	}
	runs, err := store.Runs(ctx, ledger.RunFilter{Workflow: "sim"})
	if err != nil {
		return err
	}
	runByID := map[string]scripthost.Run{}
	for _, r := range runs {
		runByID[r.ID] = r
	}
	mutByRun := map[string]scripthost.Mutation{}
	appliedKeys := map[string]bool{}
	for _, m := range muts {
		mutByRun[m.RunID] = m
		switch m.Status {
		case scripthost.MutationInFlight:
			return fmt.Errorf("mutation %s still in_flight after recovery", m.ID)
		case scripthost.MutationApplied:
			if w.keys[m.IdempotencyKey] == 0 {
				return fmt.Errorf("mutation %s recorded applied, but the service never applied key %s", m.ID, m.IdempotencyKey)
			}
			appliedKeys[m.IdempotencyKey] = true
		case scripthost.MutationFailed:
			if w.keys[m.IdempotencyKey] > 0 {
				return fmt.Errorf("mutation %s recorded failed, but the service applied key %s: lost", m.ID, m.IdempotencyKey)
			}
		}
	}
	for key := range w.keys {
		if appliedKeys[key] {
			continue
		}
		unknown := false
		for _, m := range muts {
			if m.IdempotencyKey == key && (m.Status == scripthost.MutationNeedsReconcile || m.Status == scripthost.MutationIndeterminate) {
				unknown = true
			}
		}
		if !unknown {
			return fmt.Errorf("the service applied key %s, but the ledger has it neither applied nor unknown", key)
		}
	}
	evs, err := store.Events(ctx, ledger.EventFilter{Workflow: "sim"})
	if err != nil {
		return err
	}
	out := map[string]int{}
	for _, e := range evs {
		if e.Topic == "out" {
			out[e.MessageID]++
		}
	}
	committed := map[string]int{}
	for _, r := range runs {
		if r.Status == scripthost.StatusCommitted {
			if m, ok := mutByRun[r.ID]; ok && m.Status == scripthost.MutationApplied {
				var d struct{ ID string }
				_ = json.Unmarshal(r.Prepared, &d)
				committed[d.ID]++
			}
		}
	}
	for _, e := range evs {
		if e.Topic != "in" {
			continue
		}
		switch e.Status {
		case scripthost.EventConsumed:
			if committed[e.MessageID] > 1 {
				return fmt.Errorf("event %s consumed by %d committed runs", e.MessageID, committed[e.MessageID])
			}
		case scripthost.EventReserved:
			r := runByID[e.ReservedBy]
			m, ok := mutByRun[r.ID]
			if r.Status.Final() && !(ok && (m.Status == scripthost.MutationNeedsReconcile || m.Status == scripthost.MutationIndeterminate)) {
				return fmt.Errorf("event %s reserved by run %s (%s), which is over and has no unknown outcome", e.MessageID, r.ID, r.Status)
			}
		}
		if committed[e.MessageID] != out[e.MessageID] {
			return fmt.Errorf("event %s: %d committed runs applied it, next published it %d times", e.MessageID, committed[e.MessageID], out[e.MessageID])
		}
	}
	return nil
}
