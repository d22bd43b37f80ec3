package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// sysprobe builds testdata/sysprobe.c, which makes forbidden system calls directly
// and reports the errno of each, and returns its path. Without a C compiler the test
// skips, or fails where the sandbox is required.
func sysprobe(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		if os.Getenv("SCRIPTHOST_REQUIRE_SANDBOX") != "" {
			t.Fatalf("no C compiler (%v) to build the system call probe, but SCRIPTHOST_REQUIRE_SANDBOX is set", err)
		}
		t.Skipf("no C compiler to build the system call probe: %v", err)
	}
	out := filepath.Join(t.TempDir(), "sysprobe")
	// No PIE: the i386 calls pass pointers to strings, which must sit below 4 GiB.
	build := exec.Command(cc, "-O1", "-Wall", "-no-pie", "-pthread", "-o", out, filepath.Join("testdata", "sysprobe.c"))
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build sysprobe: %v\n%s", err, b)
	}
	return out
}

// runOK runs one call and fails the test when Run itself errs.
func runOK(t *testing.T, r *Runner, program string, args ...string) Result {
	t.Helper()
	res, err := r.Run(context.Background(), Request{Program: program, Args: args})
	if err != nil {
		t.Fatalf("%s %q: %v", program, args, err)
	}
	return res
}

// TestSandboxNoPrivilege runs, as a command, the attacks of a root inside the sandbox:
// taking a read-only mount or the cover of the ledger off, mounting over the system,
// making a new user or mount namespace to regain capabilities there, entering other
// namespaces, changing root, writing anywhere but the workspace (through .. and
// through symlinks planted in it too), and reading what only root may. Each script
// prints ESCAPED when its attack worked; the host then checks that nothing it did
// shows outside.
func TestSandboxNoPrivilege(t *testing.T) {
	needSandbox(t)
	r, dir := newRunner(t, Config{Programs: []Program{{Name: "sh"}}})
	ledger := filepath.Join(dir, "ledger.db")
	if err := os.WriteFile(ledger, []byte("ledger-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.cfg.Hide = []string{ledger}

	// Outside the workspace: a secret and a target file next to it, in its parent
	// directory, and symlinks to them planted in it.
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	target := filepath.Join(outside, "target.txt")
	beside := filepath.Join(filepath.Dir(dir), fmt.Sprintf("beside-%d.txt", os.Getpid()))
	for f, b := range map[string]string{secret: "s3cr3t-value", target: "original", beside: "s3cr3t-beside"} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Remove(beside) })
	for link, to := range map[string]string{"secret-link": secret, "target-link": target, "outside-link": outside} {
		if err := os.Symlink(to, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// What a successful remount attack would leave on the host's /usr.
	usrEscape := fmt.Sprintf("/usr/scripthost-escape-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(usrEscape) })

	tests := []struct {
		name   string
		script string
		// absent are host paths the attack must not have created.
		absent []string
	}{
		{"remount /usr read-write and write there",
			"mount -o remount,bind,rw /usr && touch " + usrEscape + " && echo ESCAPED", []string{usrEscape}},
		{"remount the sandbox's root read-write",
			"mount -o remount,rw / && echo ESCAPED", nil},
		{"unmount the ledger's cover and read it",
			"umount " + ledger + "; grep -q ledger-bytes " + ledger + " && echo ESCAPED", nil},
		{"lazily unmount the ledger's cover and read it",
			"umount -l " + ledger + "; grep -q ledger-bytes " + ledger + " && echo ESCAPED", nil},
		{"mount a tmpfs over /etc",
			"mount -t tmpfs none /etc && echo ESCAPED", nil},
		{"mount a tmpfs over the workspace",
			"mount -t tmpfs none " + dir + " && echo ESCAPED", nil},
		{"bind-mount over /usr/bin",
			"mount --bind /tmp /usr/bin && echo ESCAPED", nil},
		{"unshare a user namespace", "unshare -U true && echo ESCAPED", nil},
		{"unshare a mount namespace", "unshare -m true && echo ESCAPED", nil},
		{"unshare as mapped root", "unshare -r true && echo ESCAPED", nil},
		{"mount as root of a new user namespace",
			"unshare -rm sh -c 'mount -t tmpfs none /usr && echo ESCAPED'", nil},
		{"enter pid 1's namespaces", "nsenter -t 1 -a true && echo ESCAPED", nil},
		{"enter pid 1's mount namespace", "nsenter --mount=/proc/1/ns/mnt true && echo ESCAPED", nil},
		{"change root", "chroot / true && echo ESCAPED", nil},
		{"make a device node", "mknod /tmp/disk b 1 0 && echo ESCAPED", nil},
		{"no capability", `for c in CapInh CapPrm CapEff CapBnd CapAmb; do
			grep -q "^$c:[[:space:]]*0000000000000000$" /proc/self/status || echo ESCAPED $c; done`, nil},
		{"no new privileges", `grep -q '^NoNewPrivs:[[:space:]]*1$' /proc/self/status || echo ESCAPED`, nil},
		{"not root", `[ "$(id -u)" != 0 ] && [ "$(id -g)" != 0 ] || echo ESCAPED;
			grep -E '^(Uid|Gid):' /proc/self/status | grep -qE '[[:space:]]0([[:space:]]|$)' && echo ESCAPED`, nil},
		{"write the system directories and the sandbox's root", `for d in /usr /usr/bin /etc / /root /home; do
			touch $d/scripthost-x 2>/dev/null && echo ESCAPED $d; done; echo x >> /etc/passwd && echo ESCAPED`, nil},
		{"write beside the workspace through ..",
			"echo x > ../escaped-dotdot.txt; ls ../escaped-dotdot.txt >/dev/null", []string{filepath.Join(filepath.Dir(dir), "escaped-dotdot.txt")}},
		{"read beside the workspace through ..",
			"grep -q s3cr3t ../" + filepath.Base(beside) + " && echo ESCAPED", nil},
		{"read through a planted symlink", "grep -q s3cr3t secret-link && echo ESCAPED", nil},
		{"write through a planted symlink", "echo pwned > target-link && echo ESCAPED", nil},
		{"create through a planted directory symlink",
			"echo pwned > outside-link/new.txt && echo ESCAPED", []string{filepath.Join(outside, "new.txt")}},
		{"read what only root may read in /proc",
			"cat /proc/slabinfo /proc/kpageflags /proc/vmallocinfo 2>/dev/null | head -c 1 | grep -q . && echo ESCAPED", nil},
		{"read the host's TLS private keys",
			"cat /etc/ssl/private/* 2>/dev/null | grep -q . && echo ESCAPED", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runOK(t, r, "sh", "-c", tt.script)
			if strings.Contains(res.Stdout, "ESCAPED") {
				t.Errorf("got %q (stderr %q), want the attack refused", res.Stdout, res.Stderr)
			}
			for _, p := range tt.absent {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("got %s on the host (%v), want it absent", p, err)
				}
			}
		})
	}
	for f, want := range map[string]string{ledger: "ledger-bytes", target: "original"} {
		if b, err := os.ReadFile(f); err != nil || string(b) != want {
			t.Errorf("%s: got %q, %v; want %q unchanged", f, b, err, want)
		}
	}
}

// TestSandboxSyscalls makes the forbidden system calls directly, under every ABI the
// kernel offers a 64-bit process, and checks the errno of each: the seccomp filter's
// EPERM (ENOSYS for clone3, whose flags it cannot read), EROFS for the kernel's
// writable /proc files, while plain process creation still works.
func TestSandboxSyscalls(t *testing.T) {
	needSandbox(t)
	probe := sysprobe(t)
	r, _ := newRunner(t, Config{Programs: []Program{{Name: "sysprobe", Path: probe}}})
	type check struct {
		check string
		want  syscall.Errno
		// or is another errno that also means refused.
		or syscall.Errno
	}
	// A host that is not root does not own the kernel's /proc files: refused before
	// their mount's read-only flag is looked at.
	var notOwner syscall.Errno
	if os.Getuid() != 0 {
		notOwner = syscall.EACCES
	}
	tests := []check{
		{check: "mount", want: syscall.EPERM},
		{check: "mount-bind", want: syscall.EPERM},
		{check: "umount", want: syscall.EPERM},
		{check: "pivot_root", want: syscall.EPERM},
		{check: "chroot", want: syscall.EPERM},
		{check: "fsopen", want: syscall.EPERM},
		{check: "open_tree", want: syscall.EPERM},
		{check: "unshare-user", want: syscall.EPERM},
		{check: "unshare-mount", want: syscall.EPERM},
		{check: "unshare-net", want: syscall.EPERM},
		{check: "setns-mount", want: syscall.EPERM},
		{check: "setns-user", want: syscall.EPERM},
		{check: "clone-user", want: syscall.EPERM},
		{check: "clone-mount", want: syscall.EPERM},
		{check: "clone-pid", want: syscall.EPERM},
		{check: "clone-net", want: syscall.EPERM},
		{check: "clone3", want: syscall.ENOSYS},
		{check: "keyctl", want: syscall.EPERM},
		{check: "add_key", want: syscall.EPERM},
		{check: "request_key", want: syscall.EPERM},
		{check: "ptrace", want: syscall.EPERM},
		{check: "process_vm_readv", want: syscall.EPERM},
		{check: "perf_event_open", want: syscall.EPERM},
		{check: "bpf", want: syscall.EPERM},
		{check: "userfaultfd", want: syscall.EPERM},
		{check: "io_uring_setup", want: syscall.EPERM},
		{check: "init_module", want: syscall.EPERM},
		{check: "reboot", want: syscall.EPERM},
		{check: "swapon", want: syscall.EPERM},
		{check: "open_by_handle_at", want: syscall.EPERM},
		{check: "x32-getpid", want: syscall.EPERM},
		{check: "open-write:/proc/sys/kernel/core_pattern", want: syscall.EROFS, or: notOwner},
		{check: "open-write:/proc/sys/vm/drop_caches", want: syscall.EROFS, or: notOwner},
		// Processes and threads are still made: clone without namespace flags, and
		// glibc's fallback from clone3.
		{check: "clone", want: 0},
		{check: "fork", want: 0},
		{check: "spawn", want: 0},
		{check: "thread", want: 0},
	}
	if _, err := os.Stat("/proc/sysrq-trigger"); err == nil {
		tests = append(tests, check{check: "open-write:/proc/sysrq-trigger", want: syscall.EROFS, or: notOwner})
	}
	// The i386 ABI, where the kernel offers it to 64-bit processes.
	if res := runOK(t, r, "sysprobe", "i386-getpid"); res.Stdout == "i386-getpid 0\n" {
		for _, c := range []string{"i386-mount", "i386-unshare-user", "i386-keyctl"} {
			tests = append(tests, check{check: c, want: syscall.EPERM})
		}
	} else {
		t.Logf("no i386 system calls here (%q): their filter is not exercised", strings.TrimSpace(res.Stdout))
	}
	args := make([]string, len(tests))
	for i, tt := range tests {
		args[i] = tt.check
	}
	res := runOK(t, r, "sysprobe", args...)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
		if name, v, ok := strings.Cut(line, " "); ok {
			got[name] = v
		}
	}
	for _, tt := range tests {
		v, ok := got[tt.check]
		n, err := strconv.Atoi(v)
		if e := syscall.Errno(n); !ok || err != nil || (e != tt.want && (tt.or == 0 || e != tt.or)) {
			t.Errorf("%s: got %q (%v), want errno %d (%v)", tt.check, v, errnoName(v), int(tt.want), tt.want)
		}
	}
	if t.Failed() {
		t.Logf("sysprobe stdout:\n%s\nstderr:\n%s", res.Stdout, res.Stderr)
	}
}

func errnoName(v string) string {
	n, err := strconv.Atoi(v)
	if err != nil {
		return v
	}
	if n == 0 {
		return "success"
	}
	return syscall.Errno(n).Error()
}

// TestSandboxWorkspaceOwnership: with no privilege the command still creates, changes
// and removes files in the workspace, as the host's user: what it creates belongs to
// that user outside, and inside it runs as an unprivileged uid that owns them.
func TestSandboxWorkspaceOwnership(t *testing.T) {
	needSandbox(t)
	r, dir := newRunner(t, Config{Programs: []Program{{Name: "sh"}}})
	existing := filepath.Join(dir, "existing.txt")
	if err := os.WriteFile(existing, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "doomed.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := runOK(t, r, "sh", "-c", `set -e
		echo two >> existing.txt
		mkdir -p made/deeper && echo new > made/deeper/new.txt
		chmod 600 made/deeper/new.txt
		rm doomed.txt
		mv existing.txt renamed.txt
		[ "$(stat -c %u made/deeper/new.txt)" = "$(id -u)" ]
		id -u`)
	if res.ExitCode != 0 {
		t.Fatalf("work in the workspace: got exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	if inside := strings.TrimSpace(res.Stdout); inside == "0" || inside == "" {
		t.Errorf("got uid %q inside, want a non-root one", inside)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "renamed.txt")); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("changed file: got %q, %v; want one, two", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "doomed.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed file: got %v, want it gone", err)
	}
	for _, p := range []string{"made", "made/deeper", "made/deeper/new.txt"} {
		info, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			t.Errorf("%s: got owner %d:%d, want the host's %d:%d", p, st.Uid, st.Gid, os.Getuid(), os.Getgid())
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "made/deeper/new.txt")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("chmod in the workspace: got %v, %v; want 0600", info.Mode(), err)
	}
}
