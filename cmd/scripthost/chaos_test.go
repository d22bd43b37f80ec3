package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/internal/pgtest"
)

// chaosConfig sizes the database chaos test (make chaos): a few thousand runs.
// SCRIPTHOST_CHAOS_CHARGES=n changes the number of charges.
func chaosConfig() (charges, minRestarts int, chaosFor time.Duration) {
	charges = 1500
	if n, err := strconv.Atoi(os.Getenv("SCRIPTHOST_CHAOS_CHARGES")); err == nil && n > 0 {
		charges = n
	}
	return charges, 20, 4 * time.Minute
}

// TestDatabaseChaos stops and restarts the PostgreSQL server in a loop (down 0–2 s,
// crash or fast shutdown at random, up 2–5 s) while two hosts charge events against
// the fake service. The hosts must survive every outage, say so in their logs, and
// finish the work after the last restart, with every charge applied exactly once by
// the service's count and every event consumed.
func TestDatabaseChaos(t *testing.T) {
	if os.Getenv("SCRIPTHOST_CHAOS") == "" {
		t.Skip("database chaos runs with make chaos (SCRIPTHOST_CHAOS=1): it restarts a server for minutes")
	}
	t.Setenv(tokenEnv, e2eToken)
	charges, minRestarts, chaosFor := chaosConfig()
	srv := pgtest.NewServer(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0xc4a05))

	svc := fakesvc.New()
	defer svc.Close()
	e := newHTTPEnv(t, svc.URL(), "tools.json", charges, "500ms")
	e.db = srv.URL(t)
	seedInChunks(t, e.wf, 500)
	bin := crashBinary(t)
	hosts := []*child{startShared(t, bin, e, "host-0", "", "2s"), startShared(t, bin, e, "host-1", "", "2s")}

	// Restart the server until the work is nearly done or the chaos has lasted
	// chaosFor (and at least minRestarts times), then leave it up.
	var restarts, crashes atomic.Int32
	chaosDone := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(chaosFor)
		for (svc.Total() < charges*9/10 && time.Now().Before(deadline)) || int(restarts.Load()) < minRestarts {
			time.Sleep(2*time.Second + time.Duration(rng.IntN(3000))*time.Millisecond)
			var err error
			if rng.IntN(2) == 0 {
				crashes.Add(1)
				err = srv.Kill()
			} else {
				err = srv.Stop()
			}
			if err != nil {
				chaosDone <- err
				return
			}
			time.Sleep(time.Duration(rng.IntN(2001)) * time.Millisecond)
			if err := srv.Start(); err != nil {
				chaosDone <- err
				return
			}
			restarts.Add(1)
		}
		chaosDone <- nil
	}()
	start := time.Now()
	if err := <-chaosDone; err != nil {
		t.Fatalf("chaos: %v", err)
	}
	t.Logf("%d restarts (%d crashes) in %v; %d of %d charges applied by then",
		restarts.Load(), crashes.Load(), time.Since(start).Round(time.Millisecond), svc.Total(), charges)
	finished := e.waitDone(t, charges, 10*time.Minute)
	for i, h := range hosts {
		if h.cmd.ProcessState != nil {
			t.Errorf("host %d exited during the chaos:\n%s", i, h.out.String())
		}
	}
	for i, h := range hosts {
		h.stop(t, "host "+strconv.Itoa(i))
		out := h.out.String()
		if strings.Contains(out, "panic") {
			t.Errorf("host %d panicked:\n%s", i, out)
		}
		if n := strings.Count(out, "scheduling pass failed"); n == 0 {
			t.Errorf("host %d logged no failed pass: the outages went unreported\n%s", i, out)
		} else {
			t.Logf("host %d logged %d failed passes, e.g. %s", i, n, firstLine(out, "scheduling pass failed"))
		}
	}
	if !finished {
		t.Fatalf("the work did not finish after the last restart: %d of %d charges applied\n%s",
			svc.Total(), charges, e.snapshot())
	}
	e.checkCharged(t, svc, charges)
	keepHostLogs(t, hosts)
}

// keepHostLogs writes the hosts' logs into the directory SCRIPTHOST_CHAOS_LOGS names,
// when the test failed, for a failure that a seed does not replay.
func keepHostLogs(t *testing.T, hosts []*child) {
	dir := os.Getenv("SCRIPTHOST_CHAOS_LOGS")
	if !t.Failed() || dir == "" {
		return
	}
	for i, h := range hosts {
		name := filepath.Join(dir, "host-"+strconv.Itoa(i)+".log")
		if err := os.WriteFile(name, []byte(h.out.String()), 0o644); err != nil {
			t.Errorf("keep host log: %v", err)
		}
	}
	t.Logf("host logs kept in %s", dir)
}

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// seedInChunks rewrites the charges workflow so that its producer publishes at most
// chunk events per run, once a second, until all are out: one invocation may make at
// most 1000 tool calls.
func seedInChunks(t *testing.T, path string, chunk int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wf := string(b)
	for _, r := range [][2]string{
		{"schedule: { every: '1h' }", "schedule: { every: '1s' }"},
		{"if (state && state.seeded) return undefined;\n        for (let i = 1; i <= COUNT; i++) {",
			"const from = (state && state.seeded) || 0;\n        if (from >= COUNT) return undefined;\n" +
				"        const to = Math.min(from + " + strconv.Itoa(chunk) + ", COUNT);\n        for (let i = from + 1; i <= to; i++) {"},
		{"return { seeded: COUNT };", "return { seeded: to };"},
	} {
		if !strings.Contains(wf, r[0]) {
			t.Fatalf("charges workflow: %q not found", r[0])
		}
		wf = strings.Replace(wf, r[0], r[1], 1)
	}
	writeFile(t, path, wf)
}
