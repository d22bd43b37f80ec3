package sqlite

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// walSync puts durable commits on the disk outside the write lock.
//
// Every commit on the write connection is made at synchronous=NORMAL: when COMMIT
// returns, the transaction's frames are in the WAL file (in the page cache, safe from a
// process crash) but not yet on the disk. A batch carrying a write that must survive a
// power cut is no exception; the writer answers its callers and goes on to the next
// batch, and the durable writes' callers then wait here, before they return, for an
// fsync of the WAL file begun after their commit. One fsync covers every commit made
// before it began, so the callers of several batches share it, and the writer, the
// one thread every write goes through, never waits for the disk.
//
// What the caller of a durable write does next (a mutation's external call) therefore
// happens after its record is on the disk, as with synchronous=FULL. What differs is
// that other connections may read the commit before the fsync ends; a power cut in that
// window loses it, together with every later commit (the WAL keeps a prefix of its
// commits), before its caller was told it was recorded. RATIONALE.md has the argument.
type walSync struct {
	// path is the WAL's name as SQLite opened it (see setPath).
	path string
	// syncFile flushes the WAL file to the disk: (*os.File).Sync, or a test's fault.
	syncFile func(*os.File) error
	// onSync is Options.OnSync.
	onSync func(commits int, took time.Duration)

	mu   sync.Mutex
	cond *sync.Cond
	// committed numbers the writer's commits; synced is the last one an fsync covered;
	// running says an fsync is in progress.
	committed, synced uint64
	running           bool
	file              *os.File
	// failed is the first failed fsync's error: after it the page cache may have
	// dropped the WAL's pages, so nothing written since can be promised durable, and
	// the store refuses every write (see broken).
	failed atomic.Pointer[error]
	// pending counts the durable writes committed whose callers have yet to wait:
	// close lets them finish before the file is closed.
	pending sync.WaitGroup
	fsyncs  atomic.Int64
}

func newWALSync(onSync func(int, time.Duration)) *walSync {
	w := &walSync{syncFile: (*os.File).Sync, onSync: onSync}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// setPath names the WAL file, as SQLite names it for the write connection: the
// ledger's path with symbolic links resolved and made absolute, so that a ledger
// opened through a link, or a process that changes its directory, syncs the file
// SQLite writes. The write connection sets it when it opens, before its first commit.
func (w *walSync) setPath(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.path = path
}

// commit numbers a commit the writer just made.
func (w *walSync) commit() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.committed++
	return w.committed
}

// expect counts a durable write committed whose caller is to wait.
func (w *walSync) expect() { w.pending.Add(1) }

// wait returns once commit n is on the disk: covered by the fsync in progress when it
// began after n, or else by one made here. A failed fsync fails every wait.
func (w *walSync) wait(n uint64) error {
	defer w.pending.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < n {
		if err := w.broken(); err != nil {
			return err
		}
		if w.running {
			w.cond.Wait()
			continue
		}
		w.running = true
		target, covered := w.committed, int(w.committed-w.synced)
		w.mu.Unlock()
		start := time.Now()
		err := w.fsync()
		if err == nil && w.onSync != nil {
			w.onSync(covered, time.Since(start))
		}
		w.mu.Lock()
		w.running = false
		if err != nil {
			w.failed.CompareAndSwap(nil, &err)
		} else {
			w.synced = target
		}
		w.cond.Broadcast()
	}
	return nil
}

// broken returns the error of the failed fsync that stopped the store's writes, or nil.
func (w *walSync) broken() error {
	if p := w.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fsync flushes the WAL file to the disk. An fsync applies to the file, whichever
// descriptor wrote it, so a descriptor of the store's own serves for SQLite's. The
// file stays the same while the store is open: SQLite truncates and rewrites a WAL,
// and deletes it only when its last connection closes.
func (w *walSync) fsync() error {
	w.fsyncs.Add(1)
	if w.file == nil {
		w.mu.Lock()
		path := w.path
		w.mu.Unlock()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("sqlite: open %s to sync it: %w", path, err)
		}
		w.file = f
	}
	if err := w.syncFile(w.file); err != nil {
		return fmt.Errorf("sqlite: sync %s: %w (the store takes no more writes; reopen it to go on)", w.file.Name(), err)
	}
	return nil
}

// close waits for the durable writes committed to reach the disk, then closes the
// store's descriptor of the WAL.
func (w *walSync) close() error {
	w.pending.Wait()
	if w.file == nil {
		return nil
	}
	err := w.file.Close()
	w.file = nil
	return err
}
