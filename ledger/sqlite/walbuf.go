//go:build cgo

package sqlite

/*
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// SQLite's VFS interface, as its public header declares it (the driver compiles SQLite
// in but does not put its header on the include path).
typedef long long sqlite3_int64;
typedef struct sqlite3_file sqlite3_file;
typedef struct sqlite3_io_methods sqlite3_io_methods;
typedef struct sqlite3_vfs sqlite3_vfs;
typedef void (*sqlite3_syscall_ptr)(void);
struct sqlite3_file { const sqlite3_io_methods *pMethods; };
struct sqlite3_io_methods {
	int iVersion;
	int (*xClose)(sqlite3_file*);
	int (*xRead)(sqlite3_file*, void*, int, sqlite3_int64);
	int (*xWrite)(sqlite3_file*, const void*, int, sqlite3_int64);
	int (*xTruncate)(sqlite3_file*, sqlite3_int64);
	int (*xSync)(sqlite3_file*, int);
	int (*xFileSize)(sqlite3_file*, sqlite3_int64*);
	int (*xLock)(sqlite3_file*, int);
	int (*xUnlock)(sqlite3_file*, int);
	int (*xCheckReservedLock)(sqlite3_file*, int*);
	int (*xFileControl)(sqlite3_file*, int, void*);
	int (*xSectorSize)(sqlite3_file*);
	int (*xDeviceCharacteristics)(sqlite3_file*);
	int (*xShmMap)(sqlite3_file*, int, int, int, void volatile**);
	int (*xShmLock)(sqlite3_file*, int, int, int);
	void (*xShmBarrier)(sqlite3_file*);
	int (*xShmUnmap)(sqlite3_file*, int);
	int (*xFetch)(sqlite3_file*, sqlite3_int64, int, void**);
	int (*xUnfetch)(sqlite3_file*, sqlite3_int64, void*);
};
struct sqlite3_vfs {
	int iVersion;
	int szOsFile;
	int mxPathname;
	sqlite3_vfs *pNext;
	const char *zName;
	void *pAppData;
	int (*xOpen)(sqlite3_vfs*, const char*, sqlite3_file*, int, int*);
	int (*xDelete)(sqlite3_vfs*, const char*, int);
	int (*xAccess)(sqlite3_vfs*, const char*, int, int*);
	int (*xFullPathname)(sqlite3_vfs*, const char*, int, char*);
	void *(*xDlOpen)(sqlite3_vfs*, const char*);
	void (*xDlError)(sqlite3_vfs*, int, char*);
	void (*(*xDlSym)(sqlite3_vfs*, void*, const char*))(void);
	void (*xDlClose)(sqlite3_vfs*, void*);
	int (*xRandomness)(sqlite3_vfs*, int, char*);
	int (*xSleep)(sqlite3_vfs*, int);
	int (*xCurrentTime)(sqlite3_vfs*, double*);
	int (*xGetLastError)(sqlite3_vfs*, int, char*);
	int (*xCurrentTimeInt64)(sqlite3_vfs*, sqlite3_int64*);
	int (*xSetSystemCall)(sqlite3_vfs*, const char*, sqlite3_syscall_ptr);
	sqlite3_syscall_ptr (*xGetSystemCall)(sqlite3_vfs*, const char*);
	const char *(*xNextSystemCall)(sqlite3_vfs*, const char*);
};
extern int sqlite3_initialize(void);
extern sqlite3_vfs *sqlite3_vfs_find(const char*);
extern int sqlite3_vfs_register(sqlite3_vfs*, int);
extern const char *sqlite3_filename_database(const char*);

#define OPEN_MAIN_DB 0x00000100
#define OPEN_WAL 0x00080000
#define FCNTL_COMMIT_PHASETWO 22
#define FRAME_HEADER 24
#define BUF_CAP (1 << 20)
#define MAX_WRITE (120 << 10)

// wfile is an open file of the walbuf VFS: a main database or its WAL, in front of
// the default VFS's file (real), which follows it in the same allocation.
typedef struct wfile wfile;
struct wfile {
	sqlite3_file base;
	sqlite3_file *real;
	const char *name; // a main database: the name SQLite opened it by (its pointer)
	wfile *peer;      // a main database's WAL, or a WAL's main database
	wfile *next;      // the open main databases
	// A WAL's writes not yet passed on: len bytes at file offset off.
	char *buf;
	int len;
	sqlite3_int64 off;
	// commit: the last write was the header of a commit frame, so the next is the
	// transaction's last write.
	int commit;
};

static sqlite3_vfs *orig;
static sqlite3_vfs shim;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static wfile *mains;

// Counts, for the tests: writes SQLite made to WAL files, writes passed on to the
// file, and WALs opened without their main database found (written through).
static long long nWrites, nPassed, nUnlinked;

#define REAL(f) (((wfile*)(f))->real)
#define COUNT(n) __atomic_add_fetch(&(n), 1, __ATOMIC_RELAXED)

// wflush passes a WAL's buffered writes on to its file, in writes of at most
// MAX_WRITE bytes: the default VFS writes at most 128 KiB less one byte per call.
static int wflush(wfile *c) {
	int n = c->len;
	c->len = 0;
	for (int done = 0; done < n;) {
		int size = n - done < MAX_WRITE ? n - done : MAX_WRITE;
		COUNT(nPassed);
		int rc = c->real->pMethods->xWrite(c->real, c->buf + done, size, c->off + done);
		if (rc) return rc;
		done += size;
	}
	return 0;
}

static int wclose(sqlite3_file *f) {
	wfile *c = (wfile*)f;
	int rc = wflush(c);
	pthread_mutex_lock(&mu);
	if (c->peer) c->peer->peer = 0;
	for (wfile **p = &mains; *p; p = &(*p)->next) {
		if (*p == c) { *p = c->next; break; }
	}
	pthread_mutex_unlock(&mu);
	free(c->buf);
	c->buf = 0;
	int rc2 = c->real->pMethods->xClose(c->real);
	return rc ? rc : rc2;
}

static int wread(sqlite3_file *f, void *p, int n, sqlite3_int64 off) {
	int rc = wflush((wfile*)f);
	return rc ? rc : REAL(f)->pMethods->xRead(REAL(f), p, n, off);
}

// wwrite buffers the WAL's appends. SQLite appends a transaction's frames to the WAL
// one header and one page at a time, two writes per frame; they reach the file as one
// write at the transaction's commit frame, whose header says it commits (a database
// size in bytes 4-7). Anything else (a write elsewhere in the file, one that would
// overflow the buffer) passes on at once, after the buffered writes.
static int wwrite(sqlite3_file *f, const void *p, int n, sqlite3_int64 off) {
	wfile *c = (wfile*)f;
	const unsigned char *b = p;
	int isCommitHeader = n == FRAME_HEADER && (b[4] | b[5] | b[6] | b[7]) != 0;
	int lastOfCommit = c->commit;
	c->commit = isCommitHeader;
	COUNT(nWrites);
	if (c->buf == 0) c->buf = malloc(BUF_CAP);
	if (c->buf && c->len > 0 && off == c->off + c->len && c->len + n <= BUF_CAP) {
		memcpy(c->buf + c->len, p, n);
		c->len += n;
	} else if (c->buf && c->len == 0 && !isCommitHeader && n <= MAX_WRITE) {
		memcpy(c->buf, p, n);
		c->len = n;
		c->off = off;
	} else {
		int rc = wflush(c);
		if (rc) return rc;
		COUNT(nPassed);
		rc = c->real->pMethods->xWrite(c->real, p, n, off);
		if (rc) return rc;
	}
	// The commit frame is complete: the transaction reaches the file before SQLite
	// publishes it, and a failed write (a full disk) fails the commit.
	return lastOfCommit ? wflush(c) : 0;
}

static int wtruncate(sqlite3_file *f, sqlite3_int64 size) {
	int rc = wflush((wfile*)f);
	return rc ? rc : REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int wsync(sqlite3_file *f, int flags) {
	int rc = wflush((wfile*)f);
	return rc ? rc : REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int wfilesize(sqlite3_file *f, sqlite3_int64 *size) {
	int rc = wflush((wfile*)f);
	return rc ? rc : REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int wlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int wunlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int wreserved(sqlite3_file *f, int *out) { return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out); }
static int wsectorsize(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int wdevice(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }
static int wshmmap(sqlite3_file *f, int pg, int size, int extend, void volatile **p) {
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, size, extend, p);
}
static int wshmlock(sqlite3_file *f, int offset, int n, int flags) {
	return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static int wshmunmap(sqlite3_file *f, int del) { return REAL(f)->pMethods->xShmUnmap(REAL(f), del); }
static int wfetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p) {
	int rc = wflush((wfile*)f);
	return rc ? rc : REAL(f)->pMethods->xFetch(REAL(f), off, n, p);
}
static int wunfetch(sqlite3_file *f, sqlite3_int64 off, void *p) { return REAL(f)->pMethods->xUnfetch(REAL(f), off, p); }

static int wfilecontrol(sqlite3_file *f, int op, void *arg) {
	wfile *c = (wfile*)f;
	// The end of a commit on the main database: nothing of it may stay buffered.
	if (op == FCNTL_COMMIT_PHASETWO && c->peer) {
		int rc = wflush(c->peer);
		if (rc) return rc;
	}
	return c->real->pMethods->xFileControl(c->real, op, arg);
}

// wbarrier is called on the main database between SQLite's two writes of the WAL
// index header that publish a commit to the other connections: the frames they may
// then read must be in the file. The commit frame has flushed them already; this is
// the backstop.
static void wbarrier(sqlite3_file *f) {
	wfile *c = (wfile*)f;
	if (c->peer) wflush(c->peer);
	c->real->pMethods->xShmBarrier(c->real);
}

// A main database's own reads and writes pass straight on.
static int pread_(sqlite3_file *f, void *p, int n, sqlite3_int64 off) { return REAL(f)->pMethods->xRead(REAL(f), p, n, off); }
static int pwrite_(sqlite3_file *f, const void *p, int n, sqlite3_int64 off) { return REAL(f)->pMethods->xWrite(REAL(f), p, n, off); }
static int ptruncate(sqlite3_file *f, sqlite3_int64 size) { return REAL(f)->pMethods->xTruncate(REAL(f), size); }
static int psync(sqlite3_file *f, int flags) { return REAL(f)->pMethods->xSync(REAL(f), flags); }
static int pfilesize(sqlite3_file *f, sqlite3_int64 *size) { return REAL(f)->pMethods->xFileSize(REAL(f), size); }
static int pfetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p) { return REAL(f)->pMethods->xFetch(REAL(f), off, n, p); }

static const sqlite3_io_methods mainMethods = {
	3, wclose, pread_, pwrite_, ptruncate, psync, pfilesize, wlock, wunlock, wreserved,
	wfilecontrol, wsectorsize, wdevice, wshmmap, wshmlock, wbarrier, wshmunmap, pfetch, wunfetch,
};

static const sqlite3_io_methods walMethods = {
	3, wclose, wread, wwrite, wtruncate, wsync, wfilesize, wlock, wunlock, wreserved,
	wfilecontrol, wsectorsize, wdevice, wshmmap, wshmlock, wbarrier, wshmunmap, wfetch, wunfetch,
};

// wopen opens main databases and WALs in front of the default VFS's files, and every
// other file (journals, temporary files) as the default VFS's file itself.
static int wopen(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *outFlags) {
	wfile *c = (wfile*)f;
	int wal = (flags & OPEN_WAL) != 0;
	if (name == 0 || !(wal || (flags & OPEN_MAIN_DB))) {
		return orig->xOpen(orig, name, f, flags, outFlags);
	}
	wfile *main = 0;
	if (wal) {
		const char *db = sqlite3_filename_database(name);
		pthread_mutex_lock(&mu);
		for (wfile *m = mains; m; m = m->next) {
			if (m->name == db) { main = m; break; }
		}
		pthread_mutex_unlock(&mu);
		if (main == 0) {
			// Without its main database's barrier a buffered write could be read
			// before it is in the file: this WAL is written through.
			COUNT(nUnlinked);
			return orig->xOpen(orig, name, f, flags, outFlags);
		}
	}
	memset(c, 0, sizeof *c);
	c->real = (sqlite3_file*)(c + 1);
	int rc = orig->xOpen(orig, name, c->real, flags, outFlags);
	if (rc) {
		c->base.pMethods = 0;
		return rc;
	}
	c->base.pMethods = wal ? &walMethods : &mainMethods;
	pthread_mutex_lock(&mu);
	if (wal) {
		c->peer = main;
		main->peer = c;
	} else {
		c->name = name;
		c->next = mains;
		mains = c;
	}
	pthread_mutex_unlock(&mu);
	return 0;
}

static int scripthost_walbuf_register(const char *name) {
	if (orig) return 0;
	if (sqlite3_initialize() != 0) return -1;
	orig = sqlite3_vfs_find(0);
	if (orig == 0) return -1;
	shim = *orig;
	shim.pNext = 0;
	shim.zName = name;
	shim.szOsFile = (int)((sizeof(wfile) + 7) & ~7) + orig->szOsFile;
	shim.xOpen = wopen;
	return sqlite3_vfs_register(&shim, 0);
}

static void scripthost_walbuf_counts(long long *writes, long long *passed, long long *unlinked) {
	*writes = __atomic_load_n(&nWrites, __ATOMIC_RELAXED);
	*passed = __atomic_load_n(&nPassed, __ATOMIC_RELAXED);
	*unlinked = __atomic_load_n(&nUnlinked, __ATOMIC_RELAXED);
}
*/
import "C"

import (
	"fmt"
	"sync"
)

// walVFS is the name of the VFS the write connection opens the ledger with: SQLite's
// default VFS with the WAL's writes gathered into one write per transaction.
//
// SQLite appends a transaction's pages to the WAL as frames, each written with two
// calls, its 24-byte header and then the page, so a consumer run's few dozen pages
// were twice as many pwrite calls, a tenth of the process's CPU and all of it on the
// one writer. Gathered, a transaction's frames reach the file in one write when its
// commit frame is complete: before SQLite publishes the commit to other connections
// (its WAL index header) and before COMMIT returns, so what a process crash or another
// connection sees is what it saw before, and a failed write (a full disk) still fails
// the commit it belongs to. Everything else about the files is the default VFS's.
const walVFS = "scripthost-walbuf"

var registerWALVFS = sync.OnceValue(func() error {
	name := C.CString(walVFS) // SQLite keeps the name: never freed
	if rc := C.scripthost_walbuf_register(name); rc != 0 {
		return fmt.Errorf("sqlite: register the %s VFS: SQLite error %d", walVFS, int(rc))
	}
	return nil
})

// walWriteCounts returns, for the whole process, the writes SQLite made to WAL files
// opened through walVFS, the writes that reached the files, and the WALs opened
// without their main database found (written through, unbuffered).
func walWriteCounts() (writes, passed, unlinked int64) {
	var w, p, u C.longlong
	C.scripthost_walbuf_counts(&w, &p, &u)
	return int64(w), int64(p), int64(u)
}
