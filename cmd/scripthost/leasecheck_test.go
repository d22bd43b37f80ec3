package main

import (
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/fakesvc"
)

// TestSharedLedgerRefusesCallsLongerThanTheLease: on PostgreSQL, a mutating tool whose
// timeout (30s, the HTTP tools' default) is at or above the lease TTL is refused before
// the host starts, naming the tool, its timeout and the TTL, and the service hears
// nothing; a TTL above the timeout lets the same tools run.
func TestSharedLedgerRefusesCallsLongerThanTheLease(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := fakesvc.New()
	defer svc.Close()
	e := newSharedEnv(t, svc, "tools.json", 1, "30s")
	code, _, stderr := e.run("--lease-ttl", "15s")
	if code != 2 || !strings.Contains(stderr, "tool Charges.create: timeout 30s is at or above the lease TTL 15s") {
		t.Fatalf("timeout above the TTL: got exit %d %q, want 2 naming the tool, its timeout and the TTL", code, stderr)
	}
	if n := len(svc.Requests()); n != 0 {
		t.Errorf("the service got %d requests from a refused host", n)
	}
	if code, _, stderr := e.run("--lease-ttl", "31s"); !passDone(code) {
		t.Fatalf("TTL above the timeout: got exit %d %q", code, stderr)
	}
	if len(svc.Requests()) == 0 {
		t.Error("with the TTL above the timeout the charge was not made")
	}
}

// TestPrivateLedgerTakesLongCalls: without leases (SQLite) no host takes another's
// workflow, and a tool's timeout is not bounded by --lease-ttl.
func TestPrivateLedgerTakesLongCalls(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := fakesvc.New()
	defer svc.Close()
	e := newHTTPEnv(t, svc.URL(), "tools.json", 1, "30s")
	if code, _, stderr := e.run("--lease-ttl", "15s"); !passDone(code) {
		t.Fatalf("got exit %d %q", code, stderr)
	}
}
