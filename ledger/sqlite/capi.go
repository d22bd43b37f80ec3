//go:build cgo

package sqlite

/*
#include <stdlib.h>
typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
// The driver compiles SQLite into the binary (or links the system's); these are its
// exported functions, declared here because the driver does not wrap them.
extern int sqlite3_db_config(sqlite3*, int op, ...);
extern int sqlite3_stmt_status(sqlite3_stmt*, int op, int reset);

// SQLITE_DBCONFIG_ENABLE_QPSG: a variadic function cannot be called from Go.
static int scripthost_qpsg(void *db, int on) {
	int now = -1;
	int rc = sqlite3_db_config((sqlite3*)db, 1007, on, &now);
	return rc != 0 ? -1 : now;
}

// SQLITE_STMTSTATUS_REPREPARE
static int scripthost_reprepares(void *stmt) {
	return sqlite3_stmt_status((sqlite3_stmt*)stmt, 5, 0);
}

// SQLITE_STMTSTATUS_VM_STEP
static int scripthost_vm_steps(void *stmt) {
	return sqlite3_stmt_status((sqlite3_stmt*)stmt, 4, 0);
}

extern int sqlite3_config(int, ...);
extern long long sqlite3_memory_used(void);
extern void *sqlite3_db_mutex(sqlite3*);

// SQLITE_CONFIG_MEMSTATUS off: sqlite3_malloc and sqlite3_free then keep no statistics,
// and take no global mutex to keep them. Only before SQLite is initialised.
static int scripthost_memstatus_off(void) { return sqlite3_config(9, 0); }

static long long scripthost_memory_used(void) { return sqlite3_memory_used(); }

// Whether the connection serialises its calls with a mutex of its own (it was opened
// with SQLITE_OPEN_FULLMUTEX, the driver's default).
static int scripthost_has_mutex(void *db) { return sqlite3_db_mutex((sqlite3*)db) != 0; }

extern int sqlite3_file_control(sqlite3*, const char*, int, void*);

// SQLITE_FCNTL_DATA_VERSION of the main database: a counter that changes at every
// commit of the connection and whenever it finds another connection's commit. -1 when
// SQLite refuses.
static long long scripthost_data_version(void *db) {
	unsigned int v = 0;
	if (sqlite3_file_control((sqlite3*)db, "main", 35, &v) != 0) return -1;
	return v;
}

extern const char *sqlite3_db_filename(sqlite3*, const char*);
extern const char *sqlite3_filename_wal(const char*);

// The name of the main database's WAL as SQLite opens it (symbolic links resolved,
// the path absolute), or NULL.
static const char *scripthost_wal_name(void *db) {
	const char *f = sqlite3_db_filename((sqlite3*)db, "main");
	if (f == 0 || *f == 0) return 0;
	return sqlite3_filename_wal(f);
}

extern void *sqlite3_wal_hook(sqlite3*, int(*)(void*, sqlite3*, const char*, int), void*);

// scripthost_wal_frames is the WAL hook: SQLite calls it after each commit with the
// number of frames in the WAL, which it stores where arg points.
static int scripthost_wal_frames(void *arg, sqlite3 *db, const char *name, int frames) {
	__atomic_store_n((int*)arg, frames, __ATOMIC_RELAXED);
	return 0;
}

static void scripthost_count_frames(void *db, int *into) {
	sqlite3_wal_hook((sqlite3*)db, scripthost_wal_frames, into);
}
*/
import "C"

import (
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// memstatusOff is what SQLite answered the package's request, made when the program
// starts, before any connection opens, to keep no memory statistics: 0 when it took
// effect, 21 (SQLITE_MISUSE) when SQLite was initialised before. SQLite's statistics
// take a process-wide mutex at every allocation and free (SQLite recommends building
// with SQLITE_DEFAULT_MEMSTATUS=0; the driver does not). The setting is the process's:
// sqlite3_memory_used and the soft heap limit, which the store does not use, then
// report nothing for any connection.
var memstatusOff = int(C.scripthost_memstatus_off())

// memoryUsed is SQLite's count of the memory it has allocated: 0 while it keeps no
// statistics.
func memoryUsed() int64 { return int64(C.scripthost_memory_used()) }

// hasMutex reports whether c serialises its calls with a mutex of its own.
func hasMutex(c *sqlite3.SQLiteConn) (bool, error) {
	db, err := handle(c, "db")
	if err != nil {
		return false, err
	}
	return C.scripthost_has_mutex(db) != 0, nil
}

// driverName is the driver the store opens its connections with: the SQLite driver
// with the query planner's stability guarantee switched on for every connection.
//
// Without it SQLite plans a statement with the values bound to it wherever a value
// could change the plan (a bound value compared with a partial index's condition, such
// as events_pending's status = 'pending'; the equality terms of a query with ORDER BY
// that an index might serve), and compiles the statement again at its first step
// after its bindings change. The driver clears the bindings before every execution, so
// such a statement was compiled again at every use: the store keeps its statements
// prepared so that they are compiled once, and the recompiling cost the writer more
// than the statements ran for.
// With the guarantee a plan depends on the statement's text alone, which is how the
// store's queries are written: a partial index is reached through a literal in the
// query (status = 'pending'), never through a bound value, and TestQueryPlans checks
// the plans.
const driverName = "sqlite3_scripthost"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		return setQPSG(c, true)
	}})
}

// setQPSG switches the query planner stability guarantee of c on or off.
func setQPSG(c *sqlite3.SQLiteConn, on bool) error {
	db, err := handle(c, "db")
	if err != nil {
		return err
	}
	v := C.int(0)
	if on {
		v = 1
	}
	got := C.scripthost_qpsg(db, v)
	if got < 0 || (got != 0) != on {
		return fmt.Errorf("sqlite: set the query planner stability guarantee to %v: SQLite refused", on)
	}
	return nil
}

// qpsg reports whether c has the query planner stability guarantee on.
func qpsg(c *sqlite3.SQLiteConn) (bool, error) {
	db, err := handle(c, "db")
	if err != nil {
		return false, err
	}
	got := C.scripthost_qpsg(db, -1)
	if got < 0 {
		return false, errors.New("sqlite: read the query planner stability guarantee: SQLite refused")
	}
	return got != 0, nil
}

// reprepares is how many times SQLite compiled st again since it was prepared.
func reprepares(st *sqlite3.SQLiteStmt) (int, error) {
	p, err := handle(st, "s")
	if err != nil {
		return 0, err
	}
	return int(C.scripthost_reprepares(p)), nil
}

// vmSteps is how many steps SQLite's virtual machine took running st since it was
// prepared: a count that grows with the index entries and rows its runs read.
func vmSteps(st *sqlite3.SQLiteStmt) (int, error) {
	p, err := handle(st, "s")
	if err != nil {
		return 0, err
	}
	return int(C.scripthost_vm_steps(p)), nil
}

// handle returns the C handle the driver keeps in field of v (a pointer to a struct).
// The driver does not export its handles; the field is read, never written.
func handle(v any, field string) (unsafe.Pointer, error) {
	f := reflect.ValueOf(v).Elem().FieldByName(field)
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() {
		return nil, fmt.Errorf("sqlite: the driver's %T has no open handle in field %s", v, field)
	}
	return f.UnsafePointer(), nil
}

// walName is the file name of the WAL of db's main database, as SQLite opens it.
func walName(db unsafe.Pointer) (string, error) {
	p := C.scripthost_wal_name(db)
	if p == nil {
		return "", errors.New("sqlite: the connection has no WAL file name")
	}
	return C.GoString(p), nil
}

// walFrames is where SQLite writes, after each commit on one connection, how many
// frames the WAL holds. It is C memory: SQLite keeps the pointer.
type walFrames struct{ n *C.int }

func newWALFrames() walFrames {
	return walFrames{n: (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))}
}

// load returns the frames in the WAL after the last commit counted.
func (w walFrames) load() int {
	return int(atomic.LoadInt32((*int32)(unsafe.Pointer(w.n))))
}

// free releases the counter; no connection may count into it any more.
func (w walFrames) free() { C.free(unsafe.Pointer(w.n)) }

// countFrames makes c's commits store the WAL's size in w. It replaces SQLite's own
// hook, which checkpoints the WAL in the committing connection once it passes
// wal_autocheckpoint pages: the store checkpoints on a connection of its own instead
// (see checkpointer).
func countFrames(c *sqlite3.SQLiteConn, w walFrames) error {
	db, err := handle(c, "db")
	if err != nil {
		return err
	}
	C.scripthost_count_frames(db, w.n)
	return nil
}

// dataVersion returns the connection's data version (SQLITE_FCNTL_DATA_VERSION); ok is
// false when it cannot be read.
func dataVersion(db unsafe.Pointer) (v uint32, ok bool) {
	got := int64(C.scripthost_data_version(db))
	return uint32(got), got >= 0
}
