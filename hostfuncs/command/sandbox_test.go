package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// needSandbox skips the test when no OS sandbox can run here, saying why; with
// SCRIPTHOST_REQUIRE_SANDBOX set (CI installs bubblewrap) it fails instead.
func needSandbox(t *testing.T) {
	t.Helper()
	if ok, why := Sandboxed(); !ok {
		if os.Getenv("SCRIPTHOST_REQUIRE_SANDBOX") != "" {
			t.Fatalf("no OS sandbox, but SCRIPTHOST_REQUIRE_SANDBOX is set: %v", why)
		}
		t.Skipf("no OS sandbox here (%v): install bubblewrap to run this test", why)
	}
}

// TestSandboxConfines runs allowlisted programs that try to leave the workspace: a
// secret file next to it, the home directories, /etc/shadow, a write outside it, the
// host's /tmp. Each attempt fails and leaves nothing behind; work on the workspace
// itself still succeeds.
func TestSandboxConfines(t *testing.T) {
	needSandbox(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cr3t-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	ledgerInside := "ledger.db"
	r, dir := newRunner(t, Config{Programs: []Program{{Name: "cat"}, {Name: "sh"}, {Name: "ls"}}})
	if err := os.WriteFile(filepath.Join(dir, ledgerInside), []byte("ledger-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.cfg.Hide = []string{filepath.Join(dir, ledgerInside)}
	hostTmp := filepath.Join(os.TempDir(), fmt.Sprintf("scripthost-sandbox-%d", os.Getpid()))
	t.Cleanup(func() { os.Remove(hostTmp) })

	run := func(program string, args ...string) Result {
		t.Helper()
		res, err := r.Run(context.Background(), Request{Program: program, Args: args})
		if err != nil {
			t.Fatalf("%s %v: %v", program, args, err)
		}
		return res
	}
	for _, tc := range []struct {
		name string
		res  Result
	}{
		{"read a file outside the workspace", run("cat", secret)},
		{"read /etc/shadow", run("cat", "/etc/shadow")},
		{"read the ledger inside the workspace", run("sh", "-c", "cat "+ledgerInside+" | grep -q ledger-bytes")},
		{"write outside the workspace", run("sh", "-c", "echo x > "+filepath.Join(outside, "escaped.txt"))},
		{"list /root", run("sh", "-c", "ls -A /root | grep -q .")},
		{"list /home", run("sh", "-c", "ls -A /home | grep -q .")},
		{"find the ledger's directory", run("sh", "-c", "ls "+filepath.Dir(os.Args[0])+" >/dev/null 2>&1 && ls "+outside)},
	} {
		if tc.res.ExitCode == 0 || strings.Contains(tc.res.Stdout, "s3cr3t") || strings.Contains(tc.res.Stdout, "ledger-bytes") {
			t.Errorf("%s: got exit %d, stdout %q; want it refused", tc.name, tc.res.ExitCode, tc.res.Stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got a file written outside the workspace (%v)", err)
	}
	// /tmp is private: a file written there is not on the host's /tmp.
	if res := run("sh", "-c", "echo x > "+hostTmp+" && cat "+hostTmp); res.ExitCode != 0 {
		t.Errorf("writing the sandbox's own /tmp: got %+v, want it to work", res)
	}
	if _, err := os.Stat(hostTmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got the sandbox's /tmp file on the host (%v)", err)
	}
	// The workspace works: write, read back, and the host sees the result.
	if res := run("sh", "-c", "mkdir -p sub/deep && echo hello > sub/deep/out.txt && cat sub/deep/out.txt"); res.ExitCode != 0 || res.Stdout != "hello\n" {
		t.Errorf("work in the workspace: got %+v, want hello", res)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "deep", "out.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("host view of the workspace: got %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ledgerInside)); string(b) != "ledger-bytes" {
		t.Errorf("got the hidden ledger changed to %q", b)
	}
}

// TestSandboxNetwork: a program reaches a loopback server on the host only when its
// allowlist entry declares Network.
func TestSandboxNetwork(t *testing.T) {
	needSandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf("echo > /dev/tcp/127.0.0.1/%d", port)
	for _, network := range []bool{false, true} {
		r, _ := newRunner(t, Config{Programs: []Program{{Name: "bash", Network: network}}})
		before := accepted.Load()
		res, err := r.Run(context.Background(), Request{Program: "bash", Args: []string{"-c", script}})
		if err != nil {
			t.Fatal(err)
		}
		connected := res.ExitCode == 0
		if connected != network {
			t.Errorf("Network %v: got exit %d (%s), want connected %v", network, res.ExitCode, res.Stderr, network)
		}
		if !network && accepted.Load() != before {
			t.Error("the server saw a connection from a program without network")
		}
	}
}

// TestNoSandboxRefuses: without an OS sandbox a runner with programs is refused unless
// the operator allows unconfined commands.
func TestNoSandboxRefuses(t *testing.T) {
	saved := bwrap
	t.Cleanup(func() { bwrap = saved })
	bwrap = &probe{}
	bwrap.once.Do(func() { bwrap.err = errors.New("bwrap not found (simulated)") })

	ws := newWorkspace(t)
	_, err := New(Config{Workspace: ws, Programs: []Program{{Name: "echo"}}})
	if !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "simulated") {
		t.Fatalf("got %v, want ErrNoSandbox saying why", err)
	}
	r, err := New(Config{Workspace: ws, Programs: []Program{{Name: "echo"}}, Unsafe: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sandboxed() {
		t.Error("got a sandboxed runner without a sandbox")
	}
	if res, err := r.Run(context.Background(), Request{Program: "echo", Args: []string{"hi"}}); err != nil || res.Stdout != "hi\n" {
		t.Errorf("unsafe echo: got %+v, %v", res, err)
	}
}
