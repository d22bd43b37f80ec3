package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/internal/pgtest"
)

// newSharedEnv is the charges workflow on a fresh PostgreSQL database (the test is
// skipped without a server).
func newSharedEnv(t *testing.T, svc *fakesvc.Server, tools string, charges int, timeout string) *httpEnv {
	t.Helper()
	url := pgtest.URL(t)
	e := newHTTPEnv(t, svc.URL(), tools, charges, timeout)
	e.db = url
	return e
}

// startShared starts a host that runs until stopped, named id in the leases.
func startShared(t *testing.T, bin string, e *httpEnv, id, failpoint, ttl string) *child {
	t.Helper()
	return startHost(t, bin, e, failpoint, "--poll", "100ms", "--host-id", id, "--lease-ttl", ttl)
}

// stop ends a host that runs until stopped as an operator would (SIGTERM).
func (c *child) stop(t *testing.T, what string) {
	t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	c.wait(t, time.Minute, what)
}

// done reports whether every charge event is consumed and no run is active.
func (e *httpEnv) done(charges int) bool {
	evs := e.events()
	if len(evs) != charges {
		return false
	}
	for _, st := range evs {
		if st != scripthost.EventConsumed {
			return false
		}
	}
	var runs []scripthost.Run
	e.listJSON(&runs, "runs")
	for _, r := range runs {
		if r.Status == scripthost.StatusActive {
			return false
		}
	}
	return true
}

// waitDone polls the ledger through the CLI until done or the limit.
func (e *httpEnv) waitDone(t *testing.T, charges int, limit time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if e.done(charges) {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

var chargeLine = regexp.MustCompile(`(?m)^\[charges/charge\] charge ch-\d+: `)

// TestSharedLedgerHosts runs two and then four hosts (real processes) against one
// PostgreSQL ledger and the fake payment service, and checks by the service's own
// count that every event was consumed once and every charge applied once, that the
// producer's schedule ran once across the hosts, and that every host committed some
// of the runs (each host prints one line per committed charge).
func TestSharedLedgerHosts(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d hosts", n), func(t *testing.T) {
			svc := fakesvc.New()
			defer svc.Close()
			// The work must outlast a newcomer's share yield (a second at a 5s lease
			// TTL) by far, or the first host finishes it before the others ask for
			// the workflow: 20 charges per host, each at least 75ms, one at a time.
			svc.SetLatency(75 * time.Millisecond)
			charges := 20 * n
			e := newSharedEnv(t, svc, "tools.json", charges, "2s")
			bin := crashBinary(t)
			hosts := make([]*child, n)
			for i := range hosts {
				hosts[i] = startShared(t, bin, e, "host-"+strconv.Itoa(i), "", "5s")
			}
			finished := e.waitDone(t, charges, 3*time.Minute)
			for i, h := range hosts {
				h.stop(t, "host "+strconv.Itoa(i))
			}
			if !finished {
				for i, h := range hosts {
					t.Logf("host %d:\n%s", i, h.out.String())
				}
				t.Fatalf("the hosts did not finish:\n%s", e.snapshot())
			}
			e.checkCharged(t, svc, charges)

			total := 0
			for i, h := range hosts {
				got := len(chargeLine.FindAllString(h.out.String(), -1))
				t.Logf("host %d committed %d charge runs", i, got)
				if got == 0 {
					t.Errorf("host %d committed no run: the work was not spread\n%s", i, h.out.String())
				}
				total += got
			}
			if total != charges {
				t.Errorf("charge runs committed across hosts: got %d, want %d (each exactly once)", total, charges)
			}
			var runs []scripthost.Run
			e.listJSON(&runs, "runs")
			seeds := 0
			for _, r := range runs {
				if r.Handler == "seed" {
					seeds++
				}
			}
			if seeds != 1 {
				t.Errorf("producer runs: got %d, want 1 (its hourly schedule is kept once across hosts)", seeds)
			}
		})
	}
}

// sharedKillCycles sizes the kill test: a few cycles by default, at least 100 with
// SCRIPTHOST_CHAOS=1 (CI).
func sharedKillCycles() int {
	if os.Getenv("SCRIPTHOST_CHAOS") != "" {
		return 100
	}
	return 6
}

// TestSharedLedgerStopWhileStarting: a host (run, serve) stopped (SIGTERM) while it
// is starting — connecting to the shared ledger, loading its workflow — exits 0 like a
// host stopped while running: nothing ran, and the next start does what this one did
// not.
func TestSharedLedgerStopWhileStarting(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	t.Setenv(serveTokenEnv, "a-token-of-twenty-chars")
	svc := fakesvc.New()
	defer svc.Close()
	e := newSharedEnv(t, svc, "tools.json", 1, "500ms")
	for _, cmd := range []string{"run", "serve"} {
		t.Run(cmd, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the signal arrived before the host got anywhere
			args := []string{"--db", e.db, cmd, e.wf, "--tools", e.tools, "--workspace", e.dir, "--host-id", "h"}
			if cmd == "serve" {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			var out, errOut bytes.Buffer
			code := execute(ctx, args, strings.NewReader(""), &out, &errOut)
			if code != 0 {
				t.Fatalf("exit %d, want 0 for a host stopped while starting; it printed:\n%s%s", code, out.String(), errOut.String())
			}
			if !strings.Contains(errOut.String(), "stopped while starting") {
				t.Errorf("output: got %q, want it to say the host stopped while starting", errOut.String())
			}
		})
	}
}

// TestSharedLedgerKillOneHost runs two hosts against one PostgreSQL ledger and, cycle
// after cycle, restarts one of them armed to SIGKILL itself around its next charge
// request (before or after the service applied it), while the other keeps going; the
// host it replaces is SIGKILLed at a random moment first. The survivor takes the
// workflow over when the dead host's lease expires and reconciles the charge it finds
// in flight. At the end the service's own count shows every charge applied exactly
// once and every event consumed.
func TestSharedLedgerKillOneHost(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	cycles := sharedKillCycles()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))

	svc := fakesvc.New()
	defer svc.Close()
	svc.SetLatency(10 * time.Millisecond)
	// Enough work that every cycle finds a charge to make: a cycle costs the
	// survivor a lease expiry, so about 1.3 charges are made per cycle.
	charges := 4*cycles + 10
	// Calls time out within the lease TTL, as a shared ledger requires.
	const ttl = "1s"
	e := newSharedEnv(t, svc, "tools.json", charges, "500ms")
	// One invocation may make at most 1000 tool calls: seed in runs of 500, so
	// that any number of cycles can be asked for.
	seedInChunks(t, e.wf, 500)
	bin := crashBinary(t)

	hosts := []*child{startShared(t, bin, e, "host-0", "", ttl), startShared(t, bin, e, "host-1", "", ttl)}
	// Each process has a name of its own in the leases, so that a dead host's lease is
	// taken over only once it expired, as when a machine dies.
	name := func(slot, cycle int, what string) string { return fmt.Sprintf("host-%d.%d%s", slot, cycle, what) }
	db := pgConn(t, e.db)
	var takeovers []takeover
	start := time.Now()
	byFailpoint := 0
	// What the first hosts that did not reach their charge request printed, for a
	// failure to show why.
	var missed []string
	points := []string{"tool:before-execute", "tool:after-execute"}
	for i := 0; i < cycles; i++ {
		slot := i % 2
		time.Sleep(time.Duration(rng.IntN(100)) * time.Millisecond)
		_ = hosts[slot].cmd.Process.Signal(syscall.SIGKILL)
		hosts[slot].wait(t, time.Minute, "host "+strconv.Itoa(slot))
		armed := name(slot, i, "-armed")
		hosts[slot] = startShared(t, bin, e, armed, points[rng.IntN(2)], ttl)
		// It dies at its first charge request, once it holds the workflow (or, when
		// the work is done, is killed after a while).
		waited := make(chan bool, 1)
		c := hosts[slot]
		go func() { waited <- c.cmd.Wait() != nil }()
		select {
		case <-waited:
			byFailpoint++
			killed := time.Now()
			hosts[slot] = startShared(t, bin, e, name(slot, i, ""), "", ttl)
			// Another host takes the workflow over and reconciles the charge the dead
			// one left in flight before the next cycle kills anything.
			if tk, ok := awaitTakeover(t, db, svc, armed, killed); ok {
				takeovers = append(takeovers, tk)
			} else {
				out := c.out.String()
				t.Logf("cycle %d: %s exited without a charge in flight; it printed:\n%s", i, armed, out[max(0, len(out)-2000):])
			}
			continue
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Signal(syscall.SIGKILL)
			<-waited
			if len(missed) < 3 { // the process has ended: its output is complete
				out := c.out.String()
				out = out[max(0, len(out)-2000):]
				missed = append(missed, fmt.Sprintf("cycle %d, %v into the run, host-%d printed:\n%s", i, time.Since(start).Round(time.Second), slot, out))
			}
		}
		// The slot's process has ended; a fresh one takes its place next cycle.
		hosts[slot] = startShared(t, bin, e, name(slot, i, ""), "", ttl)
	}
	t.Logf("%d cycles in %v: %d hosts killed at their charge request; %d charges applied so far",
		cycles, time.Since(start).Round(time.Millisecond), byFailpoint, svc.Total())
	reportTakeovers(t, takeovers, time.Second)
	if byFailpoint < cycles/2 {
		t.Errorf("only %d of %d cycles killed a host at its charge request; the first that did not:\n%s",
			byFailpoint, cycles, strings.Join(missed, "\n"))
	}
	finished := e.waitDone(t, charges, 3*time.Minute)
	for i, h := range hosts {
		h.stop(t, "host "+strconv.Itoa(i))
	}
	if !finished {
		// Runs whose chain of known failures outlasted the automatic retries are
		// retried as an operator would.
		e.finish(t, bin, svc)
	}
	e.checkCharged(t, svc, charges)
}

// takeover is what one kill-one-host cycle measured: from the SIGKILL of the host
// that held the workflow with a charge in flight to the first claim of the workflow's
// lease by another host, and to that host's first progress on it (the charge
// reconciled).
type takeover struct {
	claim, progress time.Duration
}

// awaitTakeover waits, for up to a minute, until another host than dead has claimed
// the workflow's lease and reconciled the mutation dead left in flight, and checks
// that the reconciliation decided as after a crash: applied when the service applied
// the charge's key, failed when the request never reached it (then the charge is made
// by a new run under a new key; checkCharged counts the service's applies at the end).
func awaitTakeover(t *testing.T, c *pgx.Conn, svc *fakesvc.Server, dead string, killed time.Time) (takeover, bool) {
	t.Helper()
	ctx := context.Background()
	var id, key string
	err := c.QueryRow(ctx, `SELECT id, idempotency_key FROM mutations WHERE status = 'in_flight'`).Scan(&id, &key)
	if errors.Is(err, pgx.ErrNoRows) {
		return takeover{}, false // it did not die at its charge request
	}
	if err != nil {
		t.Fatal(err)
	}
	var tk takeover
	deadline := time.Now().Add(time.Minute)
	for {
		if tk.claim == 0 {
			var owner string
			var claimed time.Time
			if err := c.QueryRow(ctx, `SELECT owner, claimed_at FROM leases`).Scan(&owner, &claimed); err != nil {
				t.Fatal(err)
			}
			if owner != "" && owner != dead && claimed.After(killed) {
				tk.claim = claimed.Sub(killed)
			}
		}
		var status string
		var updated int64
		if err := c.QueryRow(ctx, `SELECT status, updated_at FROM mutations WHERE id = $1`, id).Scan(&status, &updated); err != nil {
			t.Fatal(err)
		}
		if status != "in_flight" && tk.progress == 0 {
			tk.progress = time.Unix(0, updated).Sub(killed)
		}
		if status != "in_flight" && status != "needs_reconcile" {
			want := "failed"
			if svc.Applies(key) > 0 {
				want = "applied"
			}
			if status != want {
				t.Errorf("mutation %s left in flight by %s: reconciled as %s, want %s (the service applied it %d times)",
					id, dead, status, want, svc.Applies(key))
			}
			return tk, true
		}
		if time.Now().After(deadline) {
			t.Fatalf("mutation %s left in flight by %s: still %s a minute after the kill", id, dead, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reportTakeovers logs the takeover times of the kill-one-host cycles, and in the chaos
// target (make chaos) requires each within the lease TTL plus 2 s.
func reportTakeovers(t *testing.T, tks []takeover, ttl time.Duration) {
	t.Helper()
	if len(tks) == 0 {
		t.Error("no cycle killed a host at its charge request: no takeover measured")
		return
	}
	var claims, progress []time.Duration
	for _, tk := range tks {
		claims, progress = append(claims, tk.claim), append(progress, tk.progress)
	}
	stats := func(d []time.Duration) string {
		slices.Sort(d)
		r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
		return fmt.Sprintf("min %v, median %v, max %v", r(d[0]), r(d[len(d)/2]), r(d[len(d)-1]))
	}
	t.Logf("takeover after a SIGKILL (lease TTL %v, %d kills): lease claimed by another host %s; dead host's charge reconciled %s",
		ttl, len(tks), stats(claims), stats(progress))
	if most := progress[len(progress)-1]; os.Getenv("SCRIPTHOST_CHAOS") != "" && most > ttl+2*time.Second {
		t.Errorf("takeover: the slowest took %v, want within the lease TTL plus 2s (%v)", most, ttl+2*time.Second)
	}
}

// TestSharedLedgerResolveWhileRunning: a host dies just after the service applied its
// charge, with no way to look the charge up (no reconcile request declared). Another
// host takes the workflow over when the lease expires and hands the mutation to a
// person; the operator resolves it through the CLI while that host runs, and the host
// carries the run on to its commit: the charge is applied once.
func TestSharedLedgerResolveWhileRunning(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := fakesvc.New()
	defer svc.Close()
	e := newSharedEnv(t, svc, "tools-blind.json", 1, "500ms")
	bin := crashBinary(t)
	a := startShared(t, bin, e, "host-a", "tool:after-execute", "1s")
	if !a.wait(t, time.Minute, "host a") {
		t.Fatalf("host a did not reach its failpoint:\n%s", a.out.String())
	}
	b := startShared(t, bin, e, "host-b", "", "1s")
	defer func() {
		if b.cmd.ProcessState == nil {
			b.stop(t, "host b")
		}
	}()
	var m mutationView
	deadline := time.Now().Add(time.Minute)
	for {
		ms := e.mutations()
		if len(ms) == 1 && ms[0].Status == scripthost.MutationIndeterminate {
			m = ms[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mutation did not become indeterminate: %+v", ms)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "applied", "--result", `{"id":"obj_1"}`, "--by", "operator"); code != 0 {
		t.Fatalf("resolve while host b runs: exit %d: %s", code, errOut)
	}
	if !e.waitDone(t, 1, time.Minute) {
		b.stop(t, "host b")
		t.Fatalf("host b did not finish the resolved run:\n%s\n%s", b.out.String(), e.snapshot())
	}
	b.stop(t, "host b")
	if got := svc.Total(); got != 1 {
		t.Errorf("applies: got %d, want 1", got)
	}
	if !chargeLine.MatchString(b.out.String()) {
		t.Errorf("host b did not run next for the resolved charge:\n%s", b.out.String())
	}
}
