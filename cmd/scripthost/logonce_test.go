package main

import (
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// TestSharedLedgerLogsOnce runs two hosts (real processes) on one PostgreSQL ledger;
// the service drops its answer to the one charge, so the mutation becomes
// indeterminate (its tool cannot be asked what happened) and the run pauses. Both
// hosts read the shared lifecycle log to its end before they exit, yet the
// "mutation indeterminate" line is written once, by the host that made the call, not
// by each host that read the event.
func TestSharedLedgerLogsOnce(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := fakesvc.New()
	defer svc.Close()
	svc.Next(fakesvc.ApplyDrop)
	e := newSharedEnv(t, svc, "tools-blind.json", 1, "500ms")
	bin := crashBinary(t)
	hosts := []*child{startShared(t, bin, e, "host-a", "", "2s"), startShared(t, bin, e, "host-b", "", "2s")}
	deadline := time.Now().Add(time.Minute)
	for {
		ms := e.mutations()
		if len(ms) == 1 && ms[0].Status == scripthost.MutationIndeterminate {
			break
		}
		if time.Now().After(deadline) {
			for _, h := range hosts {
				h.stop(t, "host")
			}
			t.Fatalf("the mutation did not become indeterminate: %+v\n%s", ms, e.snapshot())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, h := range hosts {
		h.stop(t, "host "+string(rune('a'+i)))
	}
	const line = "mutation indeterminate: a person must resolve it"
	total := 0
	for _, h := range hosts {
		total += strings.Count(h.out.String(), line)
	}
	if total != 1 {
		t.Errorf("%q lines across the hosts: got %d, want 1\nhost-a:\n%s\nhost-b:\n%s", line, total, hosts[0].out.String(), hosts[1].out.String())
	}
}
