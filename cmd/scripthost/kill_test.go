package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// killPoints are the failpoints the kill test arms, one per cycle: each phase boundary
// of both handler kinds and both sides of the charge request. The process kills itself
// at the first one it reaches.
var killPoints = []string{
	"tool:before-execute", "tool:after-execute",
	"consumer:created", "consumer:after:pending", "consumer:after:preparing", "consumer:after:prepared",
	"consumer:after:mutating", "consumer:after:mutated", "consumer:after:emitting",
	"producer:created", "producer:after:pending", "producer:after:executing",
}

// killConfig sizes the kill test: the CI default, or a longer soak with SCRIPTHOST_SOAK.
func killConfig() (cycles, charges int) {
	if os.Getenv("SCRIPTHOST_SOAK") != "" {
		return 2000, 900
	}
	return 200, 110
}

// child is one run of the host as a separate process.
type child struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

func startChild(t *testing.T, bin string, e *httpEnv, failpoint string) *child {
	t.Helper()
	return startHost(t, bin, e, failpoint, "--once")
}

// startHost starts the host with extra flags: --once, or a poll interval for a host
// that runs until it is stopped.
func startHost(t *testing.T, bin string, e *httpEnv, failpoint string, flags ...string) *child {
	t.Helper()
	args := append([]string{"--db", e.db, "run", e.wf, "--tools", e.tools, "--workspace", e.dir}, flags...)
	c := &child{cmd: exec.Command(bin, args...)}
	c.cmd.Env = append(os.Environ(), tokenEnv+"="+e2eToken, failpointEnv+"="+failpoint)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// wait waits for the child to end, killing it after limit, and reports whether it was
// killed (by the test or by its failpoint). Any other non-zero exit fails the test.
func (c *child) wait(t *testing.T, limit time.Duration, what string) bool {
	t.Helper()
	timer := time.AfterFunc(limit, func() { _ = c.cmd.Process.Kill() })
	err := c.cmd.Wait()
	timer.Stop()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return false
	case errors.As(err, &ee) && passDone(ee.ExitCode()):
		return false // the pass ended with runs left for a person or a later retry
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		return true
	}
	t.Fatalf("%s: %v\n%s", what, err, c.out.String())
	return false
}

// TestKillHostAtRandom SIGKILLs the host (run --once, or a host that runs until stopped)
// at random moments and at every failpoint while it charges events against the fake
// service, restarting it each time, then lets it finish and checks the ledger's promise
// by the service's own count: every event consumed, every charge made exactly once, no
// key sent or applied twice, every mutation the ledger calls applied applied and every
// one it calls failed not, nothing in flight and no run stuck. SCRIPTHOST_SOAK=1 makes
// it ten times longer; SCRIPTHOST_KILL_SEED=n replays a failure.
func TestKillHostAtRandom(t *testing.T) {
	cycles, charges := killConfig()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SCRIPTHOST_KILL_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("SCRIPTHOST_KILL_SEED: %v", err)
		}
	}
	t.Logf("seed %d (replay with SCRIPTHOST_KILL_SEED=%d)", seed, seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("failed with seed %d", seed)
		}
	})
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	t.Setenv(tokenEnv, e2eToken)

	bin := crashBinary(t)
	svc := fakesvc.New()
	defer svc.Close()
	// A kill before the request went out leaves a mutation the look-up cannot find,
	// which is trusted only after the tool's timeout and as long again (2s here), so
	// each such charge waits that long before it is made afresh.
	e := newHTTPEnv(t, svc.URL(), "tools.json", charges, "1s")

	// Each charge request waits before and after its apply, so that a kill often lands
	// in the windows that matter: request sent but not applied, applied but not answered.
	svc.SetLatency(15 * time.Millisecond)

	killed, byFailpoint, finished, firstFinished := 0, 0, 0, -1
	start := time.Now()
	for i := 0; i < cycles; i++ {
		// The service misbehaves now and then, and for a stretch in the middle cannot
		// answer reconcile look-ups, so that mutations wait for a later attempt.
		switch rng.IntN(8) {
		case 0:
			svc.Next(fakesvc.ApplyDrop)
		case 1:
			svc.Next(fakesvc.Fail5xx)
		}
		switch i {
		case cycles / 3:
			svc.SetReconcile(fakesvc.ReconcileError)
		case cycles/3 + 15:
			svc.SetReconcile(fakesvc.ReconcileTruth)
		}
		point := ""
		if rng.IntN(3) == 0 {
			point = killPoints[rng.IntN(len(killPoints))]
		}
		// A failpoint the process may never reach is backed by a later random kill,
		// so that no cycle finishes all the work.
		limit := time.Duration(rng.IntN(151)) * time.Millisecond
		if point != "" {
			limit = 150*time.Millisecond + time.Duration(rng.IntN(301))*time.Millisecond
		}
		// One cycle in four runs a host that never stops by itself.
		flags := []string{"--once"}
		if rng.IntN(4) == 0 {
			flags = []string{"--poll", "10ms"}
		}
		c := startHost(t, bin, e, point, flags...)
		timer := time.AfterFunc(limit, func() { _ = c.cmd.Process.Signal(syscall.SIGKILL) })
		wasKilled := c.wait(t, time.Minute, fmt.Sprintf("cycle %d (failpoint %q)", i, point))
		fired := !timer.Stop()
		if strings.Contains(c.out.String(), e2eToken) {
			t.Fatalf("cycle %d: the secret header value appears in the host's output:\n%s", i, c.out.String())
		}
		switch {
		case !wasKilled:
			if finished == 0 {
				firstFinished = i
			}
			finished++
		case fired:
			killed++
		default:
			byFailpoint++
		}
	}
	t.Logf("%d cycles in %v: %d killed at random, %d at a failpoint, %d finished (the first at cycle %d); %d applies so far",
		cycles, time.Since(start).Round(time.Millisecond), killed, byFailpoint, finished, firstFinished, svc.Total())

	resolved, retried := e.finish(t, bin, svc)
	t.Logf("to finish: %d mutations resolved by asking the service, %d runs retried by hand", resolved, retried)
	e.checkCharged(t, svc, charges)
}

// finish runs the host to completion without kills. A run that the host will not take
// up again by itself (a chain of known failures longer than its automatic retries) is
// retried as an operator would; a mutation left for a person is resolved by asking the
// service. It returns how many mutations it resolved and how many runs it retried.
func (e *httpEnv) finish(t *testing.T, bin string, svc *fakesvc.Server) (resolved, retries int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for round := 0; time.Now().Before(deadline); round++ {
		c := startChild(t, bin, e, "")
		if c.wait(t, 2*time.Minute, "final run") {
			t.Fatalf("final run was killed:\n%s", c.out.String())
		}
		done := true
		for _, m := range e.mutations() {
			switch m.Status {
			case scripthost.MutationInFlight:
				t.Fatalf("mutation %s is still in_flight after a clean run", m.ID)
			case scripthost.MutationNeedsReconcile:
				done = false
			case scripthost.MutationIndeterminate:
				as := "failed"
				if svc.Applies(m.IdempotencyKey) > 0 {
					as = "applied"
				}
				if code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", as, "--by", "kill-test"); code != 0 {
					t.Fatalf("resolve %s: %s", m.ID, errOut)
				}
				resolved++
				done = false
			}
		}
		var runs []scripthost.Run
		e.listJSON(&runs, "runs")
		latest, retried := map[string]scripthost.Run{}, map[string]bool{}
		for _, r := range runs {
			latest[r.Handler] = r
			if r.RetryOf != "" {
				retried[r.RetryOf] = true
			}
		}
		for _, r := range latest {
			switch {
			case r.Status == scripthost.StatusCommitted || r.Status == scripthost.StatusSkipped:
			case r.Status == scripthost.StatusPausedReconciliation || r.Status == scripthost.StatusActive:
				done = false
			case !retried[r.ID]:
				if code, _, errOut := cli(t, "", "--db", e.db, "retry", r.ID); code != 0 {
					t.Fatalf("retry %s (%s: %s): %s", r.ID, r.Status, r.Error, errOut)
				}
				retries++
				done = false
			}
		}
		pending := 0
		for _, st := range e.events() {
			if st != scripthost.EventConsumed {
				pending++
			}
		}
		if done && pending == 0 {
			t.Logf("finished in %d rounds", round+1)
			return resolved, retries
		}
		// A mutation waiting for its next reconcile attempt becomes due within its
		// backoff or the look-up's window (seconds); everything else goes on at once.
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("the host did not finish the work:\n%s", e.snapshot())
	return resolved, retries
}

// checkCharged checks the end state against the service's own record.
func (e *httpEnv) checkCharged(t *testing.T, svc *fakesvc.Server, charges int) {
	t.Helper()
	evs := e.events()
	if len(evs) != charges {
		t.Errorf("events: got %d, want %d", len(evs), charges)
	}
	for id, st := range evs {
		if st != scripthost.EventConsumed {
			t.Errorf("event %s: got %s, want consumed", id, st)
		}
	}

	// Applies per charge, whatever key they carried: a charge made twice under two keys
	// is as wrong as one key applied twice.
	perCharge, keys := map[string]int{}, map[string]bool{}
	for _, r := range svc.Requests() {
		key := r.Header.Get("Idempotency-Key")
		if r.Method != http.MethodPost {
			continue
		}
		if keys[key] {
			// One key names one logical mutation: it is reconciled, never sent again.
			t.Errorf("key %s: sent more than once", key)
			continue
		}
		keys[key] = true
		n := svc.Applies(key)
		if n > 1 {
			t.Errorf("key %s: the service applied it %d times, want at most 1", key, n)
		}
		perCharge[strings.TrimPrefix(r.Path, "/v1/charges/")] += n
	}
	for i := 1; i <= charges; i++ {
		id := fmt.Sprintf("ch-%d", i)
		if got := perCharge[id]; got != 1 {
			t.Errorf("charge %s: the service applied it %d times, want 1", id, got)
		}
	}

	ms := e.mutations()
	counts := map[scripthost.MutationStatus]int{}
	for _, m := range ms {
		counts[m.Status]++
	}
	reconciled := 0
	for _, m := range ms {
		if m.ReconcileAttempts > 0 || m.ResolvedBy != "" {
			reconciled++
		}
	}
	t.Logf("%d mutations: %d applied, %d known not to have happened (charged again under a new key), %d settled after a later reconcile attempt or by a person",
		len(ms), counts[scripthost.MutationApplied], counts[scripthost.MutationFailed], reconciled)
	appliedByCharge, perRun := map[string]int{}, map[string]int{}
	for _, m := range ms {
		if perRun[m.RunID]++; perRun[m.RunID] > 1 {
			t.Errorf("run %s: got %d mutations, want at most 1 (its mutate phase ran twice)", m.RunID, perRun[m.RunID])
		}
		n := svc.Applies(m.IdempotencyKey)
		switch m.Status {
		case scripthost.MutationApplied:
			if n != 1 {
				t.Errorf("mutation %s: the ledger says applied, the service applied its key %d times", m.ID, n)
			}
			appliedByCharge[chargeOf(t, m)]++
		case scripthost.MutationFailed:
			if n != 0 {
				t.Errorf("mutation %s: the ledger says failed (%s), the service applied its key %d times", m.ID, m.Error, n)
			}
		default:
			t.Errorf("mutation %s: got %s at the end, want applied or failed", m.ID, m.Status)
		}
	}
	for i := 1; i <= charges; i++ {
		if got := appliedByCharge[fmt.Sprintf("ch-%d", i)]; got != 1 {
			t.Errorf("charge ch-%d: got %d applied mutations in the ledger, want 1", i, got)
		}
	}

	var runs []scripthost.Run
	e.listJSON(&runs, "runs")
	// next ran exactly once per committed run, in commit order: the counts the
	// committed charge runs carry in their states are 1..charges, each once, whatever
	// order the runs were created in (a run paused by an outage commits later).
	seen := map[string]string{}
	dups := 0
	for _, r := range runs {
		if r.Status == scripthost.StatusActive {
			t.Errorf("run %s is still active in phase %s", r.ID, r.Phase)
		}
		if r.Handler == "charge" && r.Status == scripthost.StatusCommitted {
			n := canonicalField(t, r.OutputState, "seen")
			if other, dup := seen[n]; dup {
				t.Errorf("runs %s and %s both committed as charge %s seen by next", other, r.ID, n)
				dups++
			}
			seen[n] = r.ID
		}
	}
	if dups > 0 {
		t.Logf("charge runs, oldest first:\n%s", chargeRunTable(runs))
	}
	for i := 1; i <= charges; i++ {
		if _, ok := seen[strconv.Itoa(i)]; !ok {
			t.Errorf("charges seen by next: no committed run saw %d of %d (next ran %d times)", i, charges, len(seen))
			break
		}
	}
}

// chargeRunTable lists the charge consumer's runs in creation order with the counts
// they began and ended with, to tell which runs began from a stale handler state.
func chargeRunTable(runs []scripthost.Run) string {
	rs := slices.Clone(runs)
	slices.SortFunc(rs, func(a, b scripthost.Run) int { return a.CreatedAt.Compare(b.CreatedAt) })
	var b strings.Builder
	for _, r := range rs {
		if r.Handler != "charge" {
			continue
		}
		fmt.Fprintf(&b, "%s created %s updated %s %s/%s attempt %d retry_of %q superseded_by %q in %s out %s err %q\n",
			r.ID, r.CreatedAt.Format("15:04:05.000000"), r.UpdatedAt.Format("15:04:05.000000"), r.Status, r.Phase,
			r.Attempt, r.RetryOf, r.SupersededBy, r.InputState, r.OutputState, r.Error)
	}
	return b.String()
}

func chargeOf(t *testing.T, m mutationView) string {
	t.Helper()
	return strings.Trim(canonicalField(t, m.Params, "charge"), `"`)
}

// canonicalField returns one top-level field of a JSON object, canonically encoded.
func canonicalField(t *testing.T, raw []byte, field string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return canonical(t, []byte(m[field]))
}

// TestKillAtToolFailpoints kills the host on either side of the charge request, with and
// without a reconcile request declared, restarts it, and checks what startup recovery
// made of the in_flight mutation, then settles what is left for a person through the CLI
// and checks that the charge was made exactly once.
func TestKillAtToolFailpoints(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	bin := crashBinary(t)
	tests := []struct {
		point, tools string
		// after the restart
		mutation scripthost.MutationStatus
		event    scripthost.EventStatus
		applies  int
		// resolve, when the first mutation waits for a person
		resolveAs string
	}{
		// The request was never sent: the look-up finds nothing, a fresh run charges.
		{"tool:before-execute", "tools.json", scripthost.MutationFailed, scripthost.EventConsumed, 1, ""},
		// The service applied it: the look-up says so.
		{"tool:after-execute", "tools.json", scripthost.MutationApplied, scripthost.EventConsumed, 1, ""},
		// Nobody can tell: the events stay reserved until a person answers.
		{"tool:before-execute", "tools-blind.json", scripthost.MutationIndeterminate, scripthost.EventReserved, 0, "failed"},
		{"tool:after-execute", "tools-blind.json", scripthost.MutationIndeterminate, scripthost.EventReserved, 1, "applied"},
	}
	for _, tc := range tests {
		t.Run(tc.point+"/"+strings.TrimSuffix(tc.tools, ".json"), func(t *testing.T) {
			svc := fakesvc.New()
			defer svc.Close()
			e := newHTTPEnv(t, svc.URL(), tc.tools, 1, "2s")
			c := startChild(t, bin, e, tc.point)
			if !c.wait(t, time.Minute, "run with failpoint "+tc.point) {
				t.Fatalf("the host did not reach %s:\n%s", tc.point, c.out.String())
			}
			if m := e.mutations(); len(m) != 1 || m[0].Status != scripthost.MutationInFlight {
				t.Fatalf("after the kill: got %+v, want one in_flight mutation", m)
			}
			if c := startChild(t, bin, e, ""); c.wait(t, time.Minute, "restart") {
				t.Fatalf("restart was killed:\n%s", c.out.String())
			}
			first := e.mutations()[0]
			if first.Status == scripthost.MutationNeedsReconcile && tc.mutation == scripthost.MutationFailed {
				// The look-up found nothing while the request could still have been
				// under way (until timeout + settle, 4s, after the record): nothing was
				// charged or released, and the first start after that trusts the 404.
				if got := svc.Total(); got != 0 {
					t.Fatalf("applies while waiting to trust the look-up: got %d, want 0", got)
				}
				time.Sleep(time.Until(first.CreatedAt.Add(4 * time.Second)))
				if c := startChild(t, bin, e, ""); c.wait(t, time.Minute, "second restart") {
					t.Fatalf("second restart was killed:\n%s", c.out.String())
				}
				first = e.mutations()[0]
			}
			if first.Status != tc.mutation {
				t.Fatalf("after the restart: got %s (%s), want %s", first.Status, first.Error, tc.mutation)
			}
			if got := e.events()["ch-1"]; got != tc.event {
				t.Errorf("event after the restart: got %s, want %s", got, tc.event)
			}
			if got := svc.Total(); got != tc.applies {
				t.Errorf("applies after the restart: got %d, want %d", got, tc.applies)
			}
			if tc.resolveAs != "" {
				if r := e.consumerRuns()[0]; r.Status != scripthost.StatusPausedReconciliation {
					t.Errorf("run: got %s, want paused:reconciliation", r.Status)
				}
				// A retry would prepare again while the outcome is unknown: refused.
				before := e.snapshot()
				if code, _, errOut := cli(t, "", "--db", e.db, "retry", first.RunID); code == 0 || !strings.Contains(errOut, "resolve it") {
					t.Errorf("retry while indeterminate: got exit %d %q, want a refusal that says to resolve it", code, errOut)
				}
				if e.snapshot() != before {
					t.Errorf("a refused retry changed the ledger")
				}
				if code, _, errOut := cli(t, "", "--db", e.db, "resolve", first.ID, "--as", tc.resolveAs); code != 0 {
					t.Fatalf("resolve: %s", errOut)
				}
				if c := startChild(t, bin, e, ""); c.wait(t, time.Minute, "run after resolving") {
					t.Fatalf("run after resolving was killed")
				}
			}
			e.checkCharged(t, svc, 1)
		})
	}
}
