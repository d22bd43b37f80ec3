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
// time zone, TLS roots (not /etc/ssl/private, whose keys the host's root, the owner
// of a root host's commands, could read), Debian's alternatives symlinks.
var etcFiles = []string{
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/hosts", "/etc/resolv.conf",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/mime.types", "/etc/magic",
}

// nobody is the uid and gid commands of a root host run as inside the sandbox.
const nobody = 65534

// probe is what Sandboxed found: the path of the bwrap program and whether it can
// forbid user namespaces inside the sandbox (--disable-userns, bubblewrap 0.8), or
// "" when it is missing or cannot create the sandbox here (err says why).
type probe struct {
	once          sync.Once
	path          string
	disableUserns bool
	err           error
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
		// Namespaces or seccomp may be refused (a container without user namespaces, a
		// kernel setting): try the isolation every command gets.
		out, err := b.try(path, true)
		if err != nil && strings.Contains(out, "disable-userns") {
			// bubblewrap before 0.8: the seccomp filter alone refuses new user
			// namespaces inside.
			out, err = b.try(path, false)
		}
		if err != nil {
			b.err = fmt.Errorf("bwrap cannot create a sandbox here: %v: %s", err, strings.TrimSpace(out))
			return
		}
		b.path = path
	})
	return b.path != "", b.err
}

// try runs true in the sandbox of a command, without a workspace.
func (b *probe) try(path string, disableUserns bool) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := append(isolationArgs(disableUserns, false), systemArgs()...)
	a = append(a, "--remount-ro", "/", "--", "true")
	cmd := exec.CommandContext(ctx, path, a...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	done, err := attachSeccomp(cmd)
	if err != nil {
		return "", err
	}
	err = cmd.Run()
	done()
	if err == nil {
		b.disableUserns = disableUserns
	}
	return out.String(), err
}

// isolationArgs are the bwrap options that take every privilege from a command: new
// namespaces of every kind (the network shared only when asked), the command's own
// user namespace where it runs as an unprivileged uid mapped to the host's (so that
// what it writes in the workspace belongs to the host's user) with no capabilities,
// no further user namespaces, the seccomp filter (on fd 3, see attachSeccomp), a new
// session (no terminal to inject input into), no_new_privs (bwrap always sets it), and
// death with the parent.
func isolationArgs(disableUserns, network bool) []string {
	uid, gid := sandboxIDs()
	a := []string{"--die-with-parent", "--new-session", "--unshare-all", "--unshare-user",
		"--uid", strconv.Itoa(uid), "--gid", strconv.Itoa(gid), "--cap-drop", "ALL"}
	if disableUserns {
		a = append(a, "--disable-userns")
	}
	if network {
		a = append(a, "--share-net")
	}
	if seccompFilter() != nil {
		a = append(a, "--seccomp", "3")
	}
	return a
}

// sandboxIDs are the uid and gid a command runs as inside the sandbox: the host's
// own, or nobody's where the host runs as root (or group root), so that no command
// sees itself as root even in its namespace. Outside, bwrap maps either to the host's.
func sandboxIDs() (uid, gid int) {
	uid, gid = os.Getuid(), os.Getgid()
	if uid <= 0 {
		uid = nobody
	}
	if gid <= 0 {
		gid = nobody
	}
	return uid, gid
}

// attachSeccomp hands the seccomp filter to cmd as its fd 3, through a pipe that holds
// it whole (a few hundred bytes; a pipe holds at least a page); done closes this
// process's end once cmd has started or failed to.
func attachSeccomp(cmd *exec.Cmd) (done func(), err error) {
	filter := seccompFilter()
	if filter == nil {
		return func() {}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("command: seccomp pipe: %w", err)
	}
	_, err = w.Write(filter)
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("command: seccomp pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{r}
	return func() { r.Close() }, nil
}

// systemArgs are the read-only system directories and /etc files, a private /dev,
// /tmp, and a /proc of the sandbox's own processes, read-only (its writable files,
// sysctls and /proc/sysrq-trigger among them, are the host's kernel's, and a root
// host's commands own them), with the files only root may read covered.
func systemArgs() []string {
	var a []string
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
	a = append(a, "--dev", "/dev", "--proc", "/proc")
	for _, f := range procRootOnly() {
		a = append(a, "--ro-bind", os.DevNull, f)
	}
	return append(a, "--remount-ro", "/proc", "--tmpfs", "/tmp", "--dir", "/home", "--dir", "/root")
}

// procRootOnly lists the files at the top of /proc that only root may read (the
// kernel's slab, page and timer details, its log): a root host's commands are root
// there, without capabilities, and these need none.
var procRootOnly = sync.OnceValue(func() []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // the process directories, self, sys, net: not root's only
		}
		info, err := e.Info()
		if err == nil && info.Mode().Perm()&0o004 == 0 {
			out = append(out, filepath.Join("/proc", e.Name()))
		}
	}
	return out
})

// sandboxArgs returns the bwrap command line that runs program p with args in dir:
// the workspace is the only writable place (bound at its own path) besides a private
// /tmp and /dev, the sandbox's root, system directories and a few /etc files are
// read-only, the home directories and everything else are absent, and the command
// holds no privilege (isolationArgs).
func (r *Runner) sandboxArgs(p Program, dir string, args []string) []string {
	root := r.cfg.Workspace.Dir()
	a := append(isolationArgs(bwrap.disableUserns, p.Network), systemArgs()...)
	a = append(a, "--bind", root, root)
	if !underAny(p.Path, systemDirs) {
		// An allowlisted program outside the system directories is bound alone, after
		// the mounts that could hide it (/tmp).
		a = append(a, "--ro-bind", p.Path, p.Path)
	}
	for _, h := range r.cfg.Hide {
		if h = filepath.Clean(h); under(h, root) {
			// A ledger kept inside the workspace: cover it with an empty file or
			// directory. The command cannot take the cover off: unmounting needs a
			// capability it does not have, and the seccomp filter refuses the call.
			if info, err := os.Stat(h); err == nil && info.IsDir() {
				a = append(a, "--tmpfs", h)
			} else if err == nil {
				a = append(a, "--ro-bind", os.DevNull, h)
			}
		}
	}
	// Last, once every mount point in it exists: the sandbox's root read-only.
	a = append(a, "--remount-ro", "/",
		"--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--chdir", dir, "--", p.Path)
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
