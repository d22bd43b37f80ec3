package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/scripthost/scripthost/internal/fakesvc"
	"github.com/scripthost/scripthost/internal/view"
)

// takeover shares a PostgreSQL ledger between two host processes: host-a is SIGKILLed
// (by its failpoint) while it holds the workflow's lease, in the middle of its charge
// request; `hosts` lists it holding the workflow and, once the lease runs out, as
// stale, and `attention` lists it among the hosts that stopped renewing. host-b then
// takes the workflow over. It returns the ledger and host-b, still running, once the
// ledger's history has the takeover.
func startTakeover(t *testing.T) (*httpEnv, *child) {
	t.Helper()
	t.Setenv(tokenEnv, e2eToken)
	svc := fakesvc.New()
	t.Cleanup(svc.Close)
	e := newSharedEnv(t, svc, "tools-blind.json", 1, "500ms")
	bin := crashBinary(t)
	a := startShared(t, bin, e, "host-a", "tool:after-execute", "2s")
	if !a.wait(t, time.Minute, "host a") {
		t.Fatalf("host a did not reach its failpoint:\n%s", a.out.String())
	}
	h := hostsOf(t, e.db)
	if len(h.Hosts) != 1 || h.Hosts[0].Owner != "host-a" || len(h.Hosts[0].Leases) != 1 {
		t.Fatalf("hosts after host-a died: got %+v, want host-a holding the workflow", h)
	}
	waitFor(t, func() bool { h = hostsOf(t, e.db); return len(h.Hosts) == 1 && h.Hosts[0].Stale })
	if h.Hosts[0].State != view.HostStale {
		t.Errorf("host-a once its lease ran out: state %q, want stale", h.Hosts[0].State)
	}
	code, out, errOut := cli(t, "", "--db", e.db, "attention", "--json")
	var att view.Attention
	if code != 0 || json.Unmarshal([]byte(out), &att) != nil {
		t.Fatalf("attention --json: exit %d: %s%s", code, out, errOut)
	}
	if len(att.StaleHosts) != 1 || att.StaleHosts[0].Owner != "host-a" {
		t.Errorf("attention: stale hosts %+v, want host-a", att.StaleHosts)
	}

	b := startShared(t, bin, e, "host-b", "", "2s")
	t.Cleanup(func() {
		if b.cmd.ProcessState == nil {
			b.stop(t, "host b")
		}
	})
	waitFor(t, func() bool { return len(hostsOf(t, e.db).Takeovers) > 0 })
	return e, b
}

// TestHostsTakeover: after host-b took the workflow over from host-a (see takeover),
// `hosts` keeps host-a, marked taken over, with its last renewal, and lists the
// takeover: the workflow, from host-a to host-b, and how long host-a had been silent
// (at least the lease's 2s TTL); host-b logs the takeover naming host-a. Once host-b
// stopped, `hosts --json` and GET /api/v1/hosts agree field for field.
func TestHostsTakeover(t *testing.T) {
	e, b := startTakeover(t)
	h := hostsOf(t, e.db)
	byOwner := map[string]view.Host{}
	for _, x := range h.Hosts {
		byOwner[x.Owner] = x
	}
	a := byOwner["host-a"]
	if a.State != view.HostTakenOver || len(a.Leases) != 0 || a.RenewedAt.IsZero() {
		t.Errorf("host-a after the takeover: got %+v, want taken over, holding nothing, with its last renewal", a)
	}
	if _, ok := byOwner["host-b"]; !ok {
		t.Errorf("hosts: got %+v, want host-b listed", h.Hosts)
	}
	x := h.Takeovers[0]
	if len(h.Takeovers) != 1 || x.Workflow != "charges" || x.From != "host-a" || x.To != "host-b" ||
		x.SilentMS < 2000 || !x.RenewedAt.Equal(a.RenewedAt) {
		t.Errorf("takeovers: got %+v, want charges from host-a to host-b after at least 2s of silence", h.Takeovers)
	}
	code, out, errOut := cli(t, "", "--db", e.db, "hosts")
	if code != 0 || !strings.Contains(out, "takeovers (1, newest first)") ||
		!regexpMatch(`(?m)^host-a\s+taken over\s+\S+ \(\S+ ago\)`, out) ||
		!regexpMatch(`(?m)^\S+\s+charges\s+host-a\s+host-b\s+\d`, out) {
		t.Errorf("hosts: exit %d, got\n%s%s\nwant host-a taken over and the takeover of charges from host-a to host-b", code, out, errOut)
	}
	b.stop(t, "host b")
	// With both hosts stopped the leases hold still: the API and the CLI agree.
	s := startServe(t, e.db, "--token", testServeToken, "--host-id", "reader")
	agree(t, s, "/api/v1/hosts", true, e.db, "hosts", "--json")
	log := b.out.String()
	if !strings.Contains(log, "lease taken over") || !strings.Contains(log, "from=host-a") {
		t.Errorf("host-b did not log the takeover from host-a:\n%s", log)
	}
}

// TestServeUIHostsTakeover drives the Hosts page in headless Chromium after host-b
// took the workflow over from the SIGKILLed host-a (see takeover): host-a's row says
// taken over, with its last renewal, and the Takeovers section lists the workflow,
// from host-a to host-b, and how long host-a had been silent. The page and the Needs
// attention page are saved as screenshots.
func TestServeUIHostsTakeover(t *testing.T) {
	chromium(t)
	e, _ := startTakeover(t)
	s := startServe(t, e.db, "--token", testServeToken, "--host-id", "ui")
	_, step, shot := uiSession(t, s)
	row := `#takeovers tr[data-workflow="charges"][data-from="host-a"][data-to="host-b"]`
	var state, renewed, silent string
	step("the Hosts page",
		chromedp.Navigate(s.base+"/#/hosts"),
		chromedp.WaitVisible(row, chromedp.ByQuery),
		chromedp.Text(`#hosts-table tr[data-host="host-a"] .host-state`, &state, chromedp.ByQuery),
		chromedp.Text(`#hosts-table tr[data-host="host-a"] td:nth-child(3)`, &renewed, chromedp.ByQuery),
		chromedp.Text(row+` .silent`, &silent, chromedp.ByQuery),
		shot("hosts-takeover"))
	step("the Needs attention page",
		chromedp.Navigate(s.base+"/#/attention"),
		chromedp.WaitVisible(`#attention-indeterminate tr[data-mutation]`, chromedp.ByQuery),
		shot("attention-after-takeover"))
	if state != view.HostTakenOver || !strings.Contains(renewed, " ago)") {
		t.Errorf("host-a's row: state %q, last renewal %q; want taken over, with its last renewal", state, renewed)
	}
	if !regexpMatch(`^\d+\.\d s$`, silent) || silent < "2.0 s" {
		t.Errorf("takeover silent for %q, want at least the lease's 2s TTL", silent)
	}
	t.Logf("screenshots in %s", artifacts(t))
}

// regexpMatch reports whether s matches the regular expression re.
func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
