package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrNoSandbox is returned by New when no OS sandbox can run commands here and the
// operator did not allow running them unconfined (Config.Unsafe).
var ErrNoSandbox = errors.New("command: no OS sandbox available to run commands in (install bubblewrap, Debian package \"bubblewrap\", or allow unconfined commands explicitly)")

// systemDirs are bound read-only into the sandbox when they exist. /etc is not among
// them: only the files programs need from it are (etcFiles), so that /etc/shadow and
// the host's configuration secrets stay out.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the parts of /etc bound read-only: name service, the dynamic loader,
// time zone, TLS roots, Debian's alternatives symlinks.
var etcFiles = []string{
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/hosts", "/etc/resolv.conf",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives",
	"/etc/ssl", "/etc/ca-certificates", "/etc/mime.types", "/etc/magic",
}

// probe is what Sandboxed found: the path of the bwrap program, or "" when it is
// missing or cannot create namespaces here (err says why).
type probe struct {
	once sync.Once
	path string
	err  error
}

var bwrap = &probe{}

// Sandboxed reports whether commands run in an OS sandbox on this machine, and if not,
// why.
func Sandboxed() (bool, error) {
	b := bwrap
	b.once.Do(func() {
		path, err := exec.LookPath("bwrap")
		if err != nil {
			b.err = fmt.Errorf("bwrap not found: %w", err)
			return
		}
		// Namespaces may be refused (a container without user namespaces, a kernel
		// setting): try the same isolation every command gets.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
			"--unshare-all", "--die-with-parent", "true").CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("bwrap cannot create a sandbox here: %v: %s", err, strings.TrimSpace(string(out)))
			return
		}
		b.path = path
	})
	return b.path != "", b.err
}

// sandboxArgs returns the bwrap command line that runs program p with args in dir:
// the workspace is the only writable place (bound at its own path), system
// directories and a few /etc files are read-only, /tmp is private and empty, the
// home directories and everything else are absent, every namespace is new (no
// network unless p.Network), and the sandbox dies with its parent.
func (r *Runner) sandboxArgs(p Program, dir string, args []string) []string {
	root := r.cfg.Workspace.Dir()
	a := []string{"--die-with-parent", "--new-session", "--unshare-all"}
	if p.Network {
		a = append(a, "--share-net")
	}
	for _, d := range systemDirs {
		if target, err := os.Readlink(d); err == nil {
			// Debian's merged /usr: /bin -> usr/bin. Recreate the link.
			a = append(a, "--symlink", target, d)
			continue
		}
		a = append(a, "--ro-bind-try", d, d)
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	a = append(a, "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--dir", "/home", "--dir", "/root",
		"--bind", root, root)
	if !underAny(p.Path, systemDirs) {
		// An allowlisted program outside the system directories is bound alone, after
		// the mounts that could hide it (/tmp).
		a = append(a, "--ro-bind", p.Path, p.Path)
	}
	for _, h := range r.cfg.Hide {
		if h = filepath.Clean(h); under(h, root) {
			// A ledger kept inside the workspace: cover it with an empty file or
			// directory.
			if info, err := os.Stat(h); err == nil && info.IsDir() {
				a = append(a, "--tmpfs", h)
			} else if err == nil {
				a = append(a, "--ro-bind", os.DevNull, h)
			}
		}
	}
	a = append(a, "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--chdir", dir, "--", p.Path)
	return append(a, args...)
}

func under(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if under(path, d) {
			return true
		}
	}
	return false
}
