package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// TestServeSIGTERMMidMutation sends SIGTERM to a real serve process while its charge is
// at the payment service: the process stops claiming work, lets the phase finish,
// records the mutation and exits 0; a second charge waiting behind it is not started.
// The next start finishes the rest, and no charge is applied twice.
func TestServeSIGTERMMidMutation(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	bin := crashBinary(t)
	svc := fakesvc.New()
	defer svc.Close()
	svc.SetDefault(fakesvc.Hold)
	e := newHTTPEnv(t, svc.URL(), "tools.json", 2, "20s")

	var stderr lockedBuffer
	cmd := exec.Command(bin, "--db", e.db, "--log-format", "json", "serve", e.wf, "--tools", e.tools, "--workspace", e.dir,
		"--listen", "127.0.0.1:0", "--token", testServeToken, "--poll", "50ms", "--grace", "20s", "--timeout", "20s")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	// The first charge reaches the service and is held there.
	waitFor(t, func() bool { return len(svc.Requests()) > 0 })
	base := servingOn.FindStringSubmatch(stderr.String())
	if base == nil {
		t.Fatalf("no serving line:\n%s", stderr.String())
	}
	req, _ := http.NewRequest("GET", base[1]+"/api/v1/mutations?status=in_flight", nil)
	req.Header.Set("Authorization", "Bearer "+testServeToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var inFlight []mutationView
	_ = json.NewDecoder(res.Body).Decode(&inFlight)
	res.Body.Close()
	if len(inFlight) != 1 {
		t.Fatalf("got %d in-flight mutations, want 1", len(inFlight))
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "stopping") })
	svc.Release() // the service answers; the phase under way finishes
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("serve exited %d after SIGTERM, want 0:\n%s", exit.ExitCode(), stderr.String())
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit after SIGTERM:\n%s", stderr.String())
	}
	for _, line := range bytes.Split(bytes.TrimSpace([]byte(stderr.String())), []byte("\n")) {
		if bytes.HasPrefix(line, []byte("{")) && !json.Valid(line) {
			t.Errorf("--log-format json wrote a line that is not JSON: %s", line)
		}
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no JSON stop line:\n%s", stderr.String())
	}

	ms := e.mutations()
	if len(ms) != 1 || ms[0].Status != scripthost.MutationApplied || ms[0].ID != inFlight[0].ID {
		t.Fatalf("after SIGTERM: got mutations %+v, want the in-flight one applied and no other started", ms)
	}
	// The next start charges the second event; nothing is applied twice.
	// The service has no record of the charge, but until the tool's timeout and the
	// settle time after it (3s + 3s) have passed since it was recorded, a slow request
	// could still land: the restart waits that out before trusting the look-up.
	out, errOut, code := runBin(t, bin, "--db", e.db, "run", e.wf, "--once", "--wait", "30s", "--tools", e.tools, "--workspace", e.dir)
	if code != 0 {
		t.Fatalf("restart: exit %d\n%s\n%s", code, out, errOut)
	}
	ms = e.mutations()
	if len(ms) != 2 || svc.Total() != 2 {
		t.Fatalf("after the restart: %d mutations, %d charges applied, want 2 and 2", len(ms), svc.Total())
	}
	for _, m := range ms {
		if m.Status != scripthost.MutationApplied || svc.Applies(m.IdempotencyKey) != 1 {
			t.Errorf("mutation %s: %s, applied %d times, want applied once", m.ID, m.Status, svc.Applies(m.IdempotencyKey))
		}
	}
}

func runBin(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errb.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

// TestServeSIGTERMGraceOver sends SIGTERM while the charge is at a slow service, with a
// grace period shorter than the call: the process cancels the phase and still exits 0,
// leaving the mutation recorded; the next start settles it from the ledger and the
// service, and the charge is made exactly once.
func TestServeSIGTERMGraceOver(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	bin := crashBinary(t)
	svc := fakesvc.New()
	defer svc.Close()
	// The service takes a second before it applies a charge and a second before it
	// answers; a client gone before the first second leaves nothing applied.
	svc.SetLatency(time.Second)
	e := newHTTPEnv(t, svc.URL(), "tools.json", 1, "3s")

	var stderr lockedBuffer
	cmd := exec.Command(bin, "--db", e.db, "serve", e.wf, "--tools", e.tools, "--workspace", e.dir,
		"--listen", "127.0.0.1:0", "--token", testServeToken, "--poll", "50ms", "--grace", "300ms", "--timeout", "20s")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	waitFor(t, func() bool { return len(svc.Requests()) > 0 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after SIGTERM and the grace period: %v, want exit 0:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not exit:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "grace period over") {
		t.Errorf("no line saying the grace period ran out:\n%s", stderr.String())
	}
	if ms := e.mutations(); len(ms) != 1 {
		t.Fatalf("after the cut: got %d mutations, want the one recorded before the call", len(ms))
	}

	// The service has no record of the charge, but until the tool's timeout and the
	// settle time after it (3s + 3s) have passed since it was recorded, a slow request
	// could still land: the restart waits that out before trusting the look-up.
	out, errOut, code := runBin(t, bin, "--db", e.db, "run", e.wf, "--once", "--wait", "30s", "--tools", e.tools, "--workspace", e.dir)
	if code != 0 {
		t.Fatalf("restart: exit %d\n%s\n%s", code, out, errOut)
	}
	if runs := e.consumerRuns(); runs[len(runs)-1].Status != scripthost.StatusCommitted || e.events()["ch-1"] != scripthost.EventConsumed {
		t.Errorf("after the restart the charge is not done: runs %+v", runs)
	}
	if svc.Total() != 1 {
		t.Errorf("the service applied %d charges, want 1", svc.Total())
	}
	for _, m := range e.mutations() {
		if n := svc.Applies(m.IdempotencyKey); n > 1 {
			t.Errorf("mutation %s (%s) applied %d times", m.ID, m.Status, n)
		}
	}
}
