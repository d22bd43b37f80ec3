package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/scripthost/scripthost/ledger"
)

// hostLock is the exclusive lock one host process holds on a ledger file: an flock on
// PATH.lock, which the kernel drops when the process dies, so a killed host never
// blocks its successor.
type hostLock struct {
	f       *os.File
	path    string
	created bool
}

// lockHost takes the host lock of the ledger at path without waiting.
func lockHost(path string) (*hostLock, error) {
	lp := path + ".lock"
	_, statErr := os.Stat(lp)
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another scripthost process: %w", path, ledger.ErrLocked)
	}
	return &hostLock{f: f, path: lp, created: errors.Is(statErr, fs.ErrNotExist)}, nil
}

// release drops the lock; abandon also removes the lock file when this lock created it
// (the file turned out not to be a ledger: nothing is left beside it).
func (l *hostLock) release(abandon bool) {
	if l == nil {
		return
	}
	if abandon && l.created {
		_ = os.Remove(l.path)
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}
