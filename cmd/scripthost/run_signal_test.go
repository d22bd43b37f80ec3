package main

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// TestRunSIGINTDrains sends SIGINT (Ctrl-C) to a real `run` process (looping, and with
// --once) while its charge is at the payment service: like serve, it stops claiming
// work, lets the phase finish, records the mutation and exits 0 (it used to exit at
// once with "context canceled"); the second charge waiting behind it is not started.
// The next start charges it, and nothing is charged twice.
func TestRunSIGINTDrains(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	for _, mode := range []struct {
		name  string
		extra []string
	}{{"loop", nil}, {"once", []string{"--once"}}} {
		t.Run(mode.name, func(t *testing.T) { testRunSIGINTDrains(t, mode.extra...) })
	}
}

func testRunSIGINTDrains(t *testing.T, extra ...string) {
	bin := crashBinary(t)
	svc := fakesvc.New()
	defer svc.Close()
	svc.SetDefault(fakesvc.Hold)
	e := newHTTPEnv(t, svc.URL(), "tools.json", 2, "20s")

	var stderr lockedBuffer
	args := append([]string{"--db", e.db, "run", e.wf, "--tools", e.tools, "--workspace", e.dir,
		"--poll", "50ms", "--grace", "20s", "--timeout", "20s"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	waited := false
	defer func() {
		if !waited {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	waitFor(t, func() bool { return len(svc.Requests()) > 0 })

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "stopping") })
	svc.Release()
	select {
	case err := <-done:
		waited = true
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("run exited %d after SIGINT, want 0:\n%s", exit.ExitCode(), stderr.String())
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not exit after SIGINT:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "context canceled") {
		t.Errorf("run said context canceled:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("no stop line:\n%s", stderr.String())
	}
	ms := e.mutations()
	if len(ms) != 1 || ms[0].Status != scripthost.MutationApplied {
		t.Fatalf("after SIGINT: got mutations %+v, want one applied and no other started", ms)
	}
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
