package sqlite

import (
	"fmt"
	"os"
	"sync"
)

// syncer makes group commits durable off the committer's path. With group commit the
// writer connection commits every batch with synchronous=NORMAL: the batch's WAL frames
// are written (safe from a process crash) but not flushed. A batch that carries a write
// a power cut must not lose is then handed here, and its callers are answered only
// once an fsync of the WAL file, made after the commit, has returned. Meanwhile the
// committer runs the next batch, so the disk's flush and the next transaction's work
// overlap instead of taking turns, and one fsync covers every batch committed before it
// started.
//
// That fsync gives what synchronous=FULL gives: FULL flushes the WAL after writing a
// commit's frames, this flushes it after the commit, and either way the caller returns
// only after the flush. A power cut before the flush may lose the batch and every later
// commit (never an earlier one: what survives is a prefix, see writeRedo), and its
// callers were not answered, so none of them acted on it.
type syncer struct {
	s    *Store
	mu   sync.Mutex
	wait []*syncWait // batches committed, waiting for their fsync
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
	// beforeSync, when set (by tests), runs between a round's commits and its fsync.
	beforeSync func()
}

// syncWait is a committed batch whose callers wait for the fsync.
type syncWait struct {
	batch   []*writeReq
	results []error
}

func newSyncer(s *Store) *syncer {
	y := &syncer{s: s, kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go y.run()
	return y
}

// add queues a committed batch; its callers are answered after the next fsync.
func (y *syncer) add(w *syncWait) {
	y.mu.Lock()
	y.wait = append(y.wait, w)
	y.mu.Unlock()
	select {
	case y.kick <- struct{}{}:
	default: // a round is already due
	}
}

func (y *syncer) run() {
	defer close(y.done)
	for {
		select {
		case <-y.kick:
			y.round()
		case <-y.quit:
			y.round()
			return
		}
	}
}

// round flushes the WAL once for every batch waiting, then answers their callers.
func (y *syncer) round() {
	y.mu.Lock()
	wait, before := y.wait, y.beforeSync
	y.wait = nil
	y.mu.Unlock()
	if len(wait) == 0 {
		return
	}
	if before != nil {
		before()
	}
	err := y.s.syncWAL()
	if err == nil {
		y.s.stats.syncs.Add(1)
	}
	for _, w := range wait {
		for i, r := range w.batch {
			if w.results[i] == nil {
				w.results[i] = err
			}
			r.done <- w.results[i]
		}
	}
}

// stop answers what is waiting and ends the syncer; the committer has stopped.
func (y *syncer) stop() {
	close(y.quit)
	<-y.done
}

// syncWAL flushes the WAL file to the disk. The file is opened for each flush rather
// than kept open: SQLite may delete and recreate it, and an fsync of a stale
// descriptor would flush nothing.
func (s *Store) syncWAL() error {
	f, err := os.Open(s.path + "-wal")
	if err != nil {
		return fmt.Errorf("sqlite: sync %s: the write is committed but may not survive a power cut: %w", s.path, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sqlite: sync %s: the write is committed but may not survive a power cut: %w", s.path, err)
	}
	return nil
}
