package workspace

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"
)

// directWrites says whether Write takes the direct path on this system.
const directWrites = true

// writeDirect is Write for the common case, in about a quarter of the system calls of
// the general path: it walks from the root to the parent directory one component at a
// time with O_NOFOLLOW (creating what is missing), so that every component is shown to
// be a real directory under the root, and then works inside that one directory handle:
// the old file is looked at without following it, the temporary file is created with
// O_EXCL, written, synced, closed and renamed over the name. The sequence on the disk
// is the general path's (temporary file synced, then renamed), so a crash leaves the
// old content or the new one, never a mix.
//
// A path with no symbolic link anywhere cannot leave the root, so the link checks of
// Clean have nothing to find. Whenever the path has a symbolic link, a component that
// is not a directory, a name that is not a regular file, or anything unexpected on the
// way, it reports done=false before changing anything but the missing directories, and
// the general path handles the call with its checks and errors.
func (w *Workspace) writeDirect(op, p, clean string, content []byte) (done bool, err error) {
	rc, err := w.top.SyscallConn()
	if err != nil {
		return false, nil
	}
	// Control keeps the root's handle open while the write uses it, even if the
	// workspace is closed meanwhile; once closed, the general path reports it.
	if cerr := rc.Control(func(top uintptr) { done, err = w.writeIn(int(top), op, p, clean, content) }); cerr != nil {
		return false, nil
	}
	return done, err
}

// writeIn is writeDirect with the root's handle top.
func (w *Workspace) writeIn(top int, op, p, clean string, content []byte) (done bool, err error) {
	parts := strings.Split(clean, "/")
	base := parts[len(parts)-1]
	dir, ok := openDir(top, parts[:len(parts)-1])
	if !ok {
		return false, nil
	}
	defer func() {
		if dir != top {
			_ = unix.Close(dir)
		}
	}()
	var st unix.Stat_t
	switch err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
	case err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG:
		return false, nil
	case st.Size == int64(len(content)):
		if same, ok := sameContent(dir, base, content); !ok {
			return false, nil
		} else if same {
			return true, nil
		}
	}
	tmp := tempName(base)
	if err := writeSynced(dir, tmp, content); err != nil {
		return true, classify(op, p, &fs.PathError{Op: "write", Path: p, Err: err})
	}
	if err := ignoringEINTR(func() error { return unix.Renameat(dir, tmp, dir, base) }); err != nil {
		_ = unix.Unlinkat(dir, tmp, 0)
		return true, classify(op, p, &fs.PathError{Op: "rename", Path: p, Err: err})
	}
	return true, nil
}

// openDir opens the directory named by parts under the root's handle top without
// following symbolic links, creating missing components. It returns top itself for no
// parts; ok is false when a component is a link or not a directory, or on any error.
func openDir(top int, parts []string) (fd int, ok bool) {
	fd = top
	for _, name := range parts {
		const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		next, err := unix.Openat(fd, name, flags, 0)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(fd, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, name, flags, 0)
			}
		}
		if fd != top {
			_ = unix.Close(fd)
		}
		if err != nil {
			return -1, false
		}
		fd = next
	}
	return fd, true
}

// sameContent reports whether the regular file base in dir holds content; ok is false
// when it cannot be read.
func sameContent(dir int, base string, content []byte) (same, ok bool) {
	fd, err := unix.Openat(dir, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, false
	}
	defer unix.Close(fd)
	buf := make([]byte, len(content)+1)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, false
		}
		if m == 0 {
			break
		}
		n += m
	}
	return bytes.Equal(buf[:n], content), true
}

// writeSynced creates the new file name in dir with content and syncs it; on failure
// the file is removed.
func writeSynced(dir int, name string, content []byte) error {
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	for rest := content; len(rest) > 0 && err == nil; {
		var n int
		switch n, err = unix.Write(fd, rest); {
		case errors.Is(err, unix.EINTR):
			err = nil
		case err == nil && n <= 0:
			err = io.ErrShortWrite
		case err == nil:
			rest = rest[n:]
		}
	}
	if err == nil {
		err = ignoringEINTR(func() error { return unix.Fsync(fd) })
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dir, name, 0)
	}
	return err
}

func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
