package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// pingWorkflow consumes each event of its topic in a run of its own and changes
// nothing.
const pingWorkflow = `export default {
  name: 'pinger',
  topics: ['pings'],
  consumers: {
    ping: {
      subscribe: ['pings'],
      async prepare() {
        const evs = await Topics.peek({ topic: 'pings', limit: 1 });
        if (evs.length === 0) return { reservations: [], data: null };
        return { reservations: [{ topic: 'pings', ids: [evs[0].id] }], data: evs[0].id };
      },
      async mutate() {},
      async next() { return undefined; },
    },
  },
};
`

// pgConn connects the test to the ledger's database, to read what the CLI does not
// show (lease claims, the server's statistics).
func pgConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(ctx) })
	return c
}

// claimsAndXacts returns how many times the workflow's lease was claimed so far (one
// claim per scheduling pass) and the database's transactions so far.
func claimsAndXacts(t *testing.T, c *pgx.Conn, workflow string) (claims, xacts int64) {
	t.Helper()
	claims, err := leaseClaims(c, workflow)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(context.Background(), `SELECT xact_commit + xact_rollback FROM pg_stat_database
		WHERE datname = current_database()`).Scan(&xacts); err != nil {
		t.Fatal(err)
	}
	return claims, xacts
}

// leaseClaims returns how many times the workflow's lease was claimed so far.
func leaseClaims(c *pgx.Conn, workflow string) (int64, error) {
	var claims int64
	err := c.QueryRow(context.Background(), `SELECT COALESCE((SELECT claims FROM leases WHERE workflow = $1), 0)`, workflow).Scan(&claims)
	return claims, err
}

// idleWindow is how long TestSharedLedgerIdleHost watches an idle host: a minute in
// the chaos target (make chaos), a few seconds otherwise.
func idleWindow() time.Duration {
	if os.Getenv("SCRIPTHOST_CHAOS") != "" {
		return time.Minute
	}
	return 5 * time.Second
}

// startPinger starts a host of the ping workflow, polling every poll.
func startPinger(t *testing.T, url, dir, id string, poll time.Duration) *child {
	t.Helper()
	wf := filepath.Join(dir, "pinger.js")
	writeFile(t, wf, pingWorkflow)
	h := &child{cmd: exec.Command(crashBinary(t), "--db", url, "run", wf, "--workspace", dir, "--poll", poll.String(), "--host-id", id)}
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.out
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	return h
}

// waitPasses waits until the workflow's lease was claimed at least n times in all.
func waitPasses(t *testing.T, c *pgx.Conn, h *child, workflow string, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		// Until the host created the schema, there is no table to read.
		if claims, err := leaseClaims(c, workflow); err == nil && claims >= n {
			return
		}
		if time.Now().After(deadline) {
			h.stop(t, "host")
			t.Fatalf("the host made no pass within a minute:\n%s", h.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSharedLedgerIdleHost runs a host (a real process) on a PostgreSQL ledger with
// nothing to do and checks that it looks for work once per poll interval, not more:
// each pass claims the workflow's lease once, so the claims over a window bound its
// passes (a host woken by its own lease release after every pass claimed it hundreds of
// times a second). It logs the database transactions per minute of the idle host.
//
// Then a host that polls once a minute is left idle between events published one at a
// time through the CLI, as another process would, and the test logs how long each
// event took to reach it (its lease claimed for the pass that takes the event up) and
// to become a run, by the times in the ledger (these include the host's pass, and
// depend on the machine's load). Last it times the wake-up itself: an event published
// through one store wakes an idle subscriber on another; the chaos target (make chaos)
// requires its 99th percentile under 50 ms: a host is woken by NOTIFY, not found by its
// poll.
func TestSharedLedgerIdleHost(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	const poll = 250 * time.Millisecond
	h := startPinger(t, url, dir, "idle", poll)
	c := pgConn(t, url)
	waitPasses(t, c, h, "pinger", 2)

	window := idleWindow()
	c0, x0 := claimsAndXacts(t, c, "pinger")
	start := time.Now()
	time.Sleep(window)
	c1, x1 := claimsAndXacts(t, c, "pinger")
	took := time.Since(start)
	h.stop(t, "idle host")
	passes := c1 - c0
	// Two statements of the test's own per reading.
	xacts := x1 - x0 - 2
	perMin := func(n int64) float64 { return float64(n) * float64(time.Minute) / float64(took) }
	t.Logf("idle host, --poll %v, over %v: %d passes (%.0f/min), %d transactions (%.0f/min, %.1f per pass)",
		poll, took.Round(time.Millisecond), passes, perMin(passes), xacts, perMin(xacts), float64(xacts)/float64(max(passes, 1)))
	// At most one pass per poll interval, and one for the listener's first wake-up.
	if most := int64(took/poll) + 2; passes > most {
		t.Errorf("idle host: %d passes in %v, want at most %d with --poll %v: it polls without pause", passes, took, most, poll)
	}

	h = startPinger(t, url, dir, "sleepy", time.Minute)
	claims, _ := leaseClaims(c, "pinger")
	waitPasses(t, c, h, "pinger", claims+1)
	reach, run := publishLatencies(t, c, url, 50)
	h.stop(t, "sleepy host")
	pct := func(d []time.Duration) string {
		slices.Sort(d)
		return fmt.Sprintf("min %v, p50 %v, p99 %v, max %v", d[0].Round(10*time.Microsecond), d[len(d)/2].Round(10*time.Microsecond),
			d[len(d)*99/100].Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
	}
	t.Logf("publish (CLI) to an idle host (--poll 1m), %d events: reached it (lease claimed) %s; run created %s", len(reach), pct(reach), pct(run))

	wake := wakeLatencies(t, url, 200)
	t.Logf("publish to the wake-up of an idle listener (another store, its own connections), %d events: %s", len(wake), pct(wake))
	if p99 := wake[len(wake)*99/100]; os.Getenv("SCRIPTHOST_CHAOS") != "" && p99 > 50*time.Millisecond {
		t.Errorf("publish to the wake-up of an idle host: p99 %v, want under 50ms", p99)
	}
}

// wakeLatencies publishes n events through one store and returns, for each, how long
// from the start of the publication (its commit included) a second store's subscriber
// of the workflow, idle otherwise, was woken.
func wakeLatencies(t *testing.T, url string, n int) []time.Duration {
	t.Helper()
	ctx := context.Background()
	stores := make([]*postgres.Store, 2)
	for i := range stores {
		st, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		stores[i] = st
	}
	ch, stop := stores[1].Wakeups("pinger")
	defer stop()
	wait := func(what string) {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no wake-up", what)
		}
	}
	wait("the listener's first") // it wakes every subscriber once connected
	var lat []time.Duration
	for i := range n {
		start := time.Now()
		if _, err := stores[0].Publish(ctx, ledger.NewEvent{Workflow: "pinger", Topic: "pings", MessageID: fmt.Sprintf("wake-%d", i),
			Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		wait("publish")
		lat = append(lat, time.Since(start))
	}
	return lat
}

// publishLatencies publishes n events through the CLI, each once the host is idle
// again (the previous event consumed, the lease released), and returns for each how
// long after its publication (the event's creation time) the host claimed the lease
// for the pass that took it up, and how long until its run was created. The lease is
// read every few milliseconds: its claim time is overwritten by the next pass's.
func publishLatencies(t *testing.T, c *pgx.Conn, url string, n int) (reach, run []time.Duration) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprintf("ping-%d", i)
		if code, _, errOut := cli(t, "", "--db", url, "publish", "pinger", "pings", "--id", id, "--payload", "{}"); code != 0 {
			t.Fatalf("publish %s: exit %d: %s", id, code, errOut)
		}
		deadline := time.Now().Add(time.Minute)
		var claimed time.Time
		for {
			var published int64
			var created *int64
			var status, owner string
			var at time.Time
			err := c.QueryRow(ctx, `SELECT e.created_at, e.status, r.created_at, l.owner, l.claimed_at
				FROM events e LEFT JOIN runs r ON r.id = e.reserved_by, leases l
				WHERE e.workflow = 'pinger' AND e.message_id = $1 AND l.workflow = 'pinger'`, id).Scan(&published, &status, &created, &owner, &at)
			if err != nil {
				t.Fatal(err)
			}
			if claimed.IsZero() && at.UnixNano() >= published {
				claimed = at
				reach = append(reach, time.Duration(at.UnixNano()-published))
			}
			if created != nil && status == "consumed" && owner == "" {
				run = append(run, time.Duration(*created-published))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("event %s: not consumed within a minute (status %s)", id, status)
			}
			time.Sleep(3 * time.Millisecond)
		}
	}
	return reach, run
}
