package command

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestSeccompFilter: the filter assembles (every jump within BPF's reach) into whole
// instructions, small enough for the pipe that hands it to bwrap, on the
// architectures that keep a table.
func TestSeccompFilter(t *testing.T) {
	f := seccompFilter()
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		if f != nil {
			t.Fatalf("got a %d-byte filter on %s/%s, want none", len(f), runtime.GOOS, runtime.GOARCH)
		}
		t.Skipf("no seccomp filter on %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if len(f) == 0 || len(f)%8 != 0 || len(f) > 4096 {
		t.Fatalf("got a %d-byte filter, want whole 8-byte instructions within a page", len(f))
	}
}

// TestProbe: Sandboxed tries the isolation commands get, falls back to the seccomp
// filter alone where bwrap predates --disable-userns, and says why where bwrap cannot
// make the sandbox. The older and the broken bwrap are scripts in front of the real one.
func TestProbe(t *testing.T) {
	needSandbox(t)
	bin := bwrap.path
	tests := []struct {
		name        string
		script      string
		wantOK      bool
		wantDisable bool
		wantErr     string
	}{
		{"this bwrap", `exec ` + bin + ` "$@"`, true, true, ""},
		{"bwrap before 0.8", `for a; do [ "$a" = --disable-userns ] && { echo "bwrap: Unknown option --disable-userns" >&2; exit 1; }; done
exec ` + bin + ` "$@"`, true, false, ""},
		{"no namespaces", `echo "bwrap: No permissions to create new namespace" >&2; exit 1`, false, false, "No permissions"},
	}
	saved := bwrap
	t.Cleanup(func() { bwrap = saved })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte("#!/bin/sh\n"+tt.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			bwrap = &probe{}
			ok, err := Sandboxed()
			if ok != tt.wantOK || bwrap.disableUserns != tt.wantDisable {
				t.Errorf("got sandboxed %v, --disable-userns %v (%v); want %v, %v", ok, bwrap.disableUserns, err, tt.wantOK, tt.wantDisable)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("got %v, want an error saying %q", err, tt.wantErr)
			}
		})
	}
}

// TestSandboxArgs: a command gets the isolation the probe tried, and a command of a
// root host runs as nobody inside.
func TestSandboxArgs(t *testing.T) {
	needSandbox(t)
	r, dir := newRunner(t, Config{Programs: []Program{{Name: "sh"}}})
	got := r.sandboxArgs(r.programs["sh"], dir, []string{"-c", "true"})
	for _, want := range [][]string{
		isolationArgs(bwrap.disableUserns, false),
		systemArgs(),
		{"--bind", dir, dir},
		{"--remount-ro", "/"},
		{"--cap-drop", "ALL"},
		{"--unshare-user"},
	} {
		if !containsRun(got, want) {
			t.Errorf("got %q, want it to contain %q", got, want)
		}
	}
	uid, gid := sandboxIDs()
	if uid == 0 || gid == 0 || (os.Getuid() != 0 && uid != os.Getuid()) {
		t.Errorf("got ids %d:%d inside for host uid %d, want the host's or nobody's, never root", uid, gid, os.Getuid())
	}
}

func containsRun(s, run []string) bool {
	for i := range s {
		if i+len(run) <= len(s) && slices.Equal(s[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// TestSandboxSeccompAloneRefusesUserns: where bwrap cannot disable user namespaces
// (before 0.8), the seccomp filter alone refuses to make or join one.
func TestSandboxSeccompAloneRefusesUserns(t *testing.T) {
	needSandbox(t)
	if seccompFilter() == nil {
		t.Skipf("no seccomp filter on %s", runtime.GOARCH)
	}
	saved := bwrap.disableUserns
	t.Cleanup(func() { bwrap.disableUserns = saved })
	bwrap.disableUserns = false
	probe := sysprobe(t)
	r, _ := newRunner(t, Config{Programs: []Program{{Name: "sysprobe", Path: probe}, {Name: "sh"}}})
	if a := r.sandboxArgs(r.programs["sh"], r.cfg.Workspace.Dir(), nil); slices.Contains(a, "--disable-userns") {
		t.Fatalf("got %q, want no --disable-userns", a)
	}
	res := runOK(t, r, "sysprobe", "unshare-user", "clone-user", "setns-user", "clone3")
	if want := "unshare-user 1\nclone-user 1\nsetns-user 1\nclone3 38\n"; res.Stdout != want {
		t.Errorf("got %q, want %q", res.Stdout, want)
	}
	if res := runOK(t, r, "sh", "-c", "unshare -r true && echo ESCAPED"); strings.Contains(res.Stdout, "ESCAPED") || res.ExitCode == 0 {
		t.Errorf("unshare -r: got %+v, want it refused", res)
	}
}
