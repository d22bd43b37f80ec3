package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// lockWaitLogged is the server's deadlock_timeout: a lock wait longer than this is
// logged (log_lock_waits), and Meter counts it.
const lockWaitLogged = "1ms"

// Counts is what one database of the server did over a measured span, counted by the
// server itself, so that it is the same measure whatever client did the work.
type Counts struct {
	// Statements are the statements the server ran for the database, BEGIN and
	// COMMIT included (pg_stat_statements); -1 when the server does not count them.
	Statements int64
	// Begins are the transactions opened with BEGIN (among Statements).
	Begins int64
	// WriteTx are the transaction ids the server handed out: the transactions that
	// wrote, explicit or a single statement's. The counter is the server's, so it
	// includes every database's writes: the meter is for a server the benchmark has
	// to itself.
	WriteTx int64
	// LockWaits are lock waits longer than lockWaitLogged, Deadlocks deadlocks
	// detected and SerializationFailures refused serialisations, in the database,
	// from the server's log; -1 when the log is not at hand (a server not started
	// here).
	LockWaits, Deadlocks, SerializationFailures int64
	// RowLockWaits are the LockWaits for a row: for a transaction (that holds a row
	// the waiter wants) or a tuple, rather than for the extension of a table's file.
	RowLockWaits int64
	// WALBytes and WALFullPages are the write-ahead log the database's statements
	// wrote: its bytes, and the full-page images among them (pg_stat_statements).
	WALBytes, WALFullPages int64
	// ServerCPU is the CPU time (user and system) of the server's processes; -1 when
	// the server was not started here.
	ServerCPU time.Duration
	// ByStatement are the statements by text with how often each ran, most first.
	ByStatement []StatementCount
	// Waited are the statements that waited for a lock (LockWaits), by the lock and
	// the statement's text.
	Waited map[string]int
}

// StatementCount is one statement text and how often the server ran it.
type StatementCount struct {
	Calls int64
	// Time is the server's time running them (planning and execution).
	Time time.Duration
	// WALBytes is the write-ahead log they wrote.
	WALBytes int64
	// Blocks are the pages of tables and indexes they read, in the cache or not
	// (shared_blks_hit + shared_blks_read), a page once per access.
	Blocks int64
	Query  string
}

// Meter counts what one database does from Start to Stop (see Counts).
type Meter struct {
	admin  string // URL of the server's maintenance database
	dbname string
	srv    *Server
	stmts  bool
	xid0   int64
	cpu0   time.Duration
	log0   int64
}

// StartMeter starts counting what the database url names does. The server's
// statements are counted only when it loads pg_stat_statements (servers started
// here do).
func StartMeter(t testing.TB, dbURL string) *Meter {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("pgtest: meter: %v", err)
	}
	m := &Meter{dbname: strings.TrimPrefix(u.Path, "/")}
	u.Path = "/postgres"
	m.admin = u.String()
	if s := DefaultServer(); s != nil && strings.Contains(dbURL, fmt.Sprintf(":%d/", s.port)) {
		m.srv = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, m.admin)
	if err != nil {
		t.Fatalf("pgtest: meter: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err == nil {
		_, err = c.Exec(ctx, `SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = $1), 0)`, m.dbname)
		m.stmts = err == nil
	}
	if m.xid0, err = nextXID(ctx, c); err != nil {
		t.Fatalf("pgtest: meter: %v", err)
	}
	m.cpu0 = -1
	if m.srv != nil {
		m.cpu0 = m.srv.CPUTime()
		if fi, err := os.Stat(m.srv.logPath()); err == nil {
			m.log0 = fi.Size()
		}
	}
	return m
}

func nextXID(ctx context.Context, c *pgx.Conn) (int64, error) {
	var x int64
	err := c.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&x)
	return x, err
}

// Stop returns what the database did since StartMeter.
func (m *Meter) Stop(t testing.TB) Counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := Counts{Statements: -1, LockWaits: -1, RowLockWaits: -1, Deadlocks: -1, SerializationFailures: -1, ServerCPU: -1}
	if m.srv != nil {
		out.ServerCPU = m.srv.CPUTime() - m.cpu0
	}
	c, err := pgx.Connect(ctx, m.admin)
	if err != nil {
		t.Fatalf("pgtest: meter: %v", err)
	}
	defer c.Close(ctx)
	xid, err := nextXID(ctx, c)
	if err != nil {
		t.Fatalf("pgtest: meter: %v", err)
	}
	out.WriteTx = xid - m.xid0
	if m.stmts {
		rows, err := c.Query(ctx, `SELECT calls, total_plan_time + total_exec_time, wal_bytes::bigint, wal_fpi, shared_blks_hit + shared_blks_read, query FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY calls DESC, query`, m.dbname)
		if err != nil {
			t.Fatalf("pgtest: meter: %v", err)
		}
		out.Statements = 0
		for rows.Next() {
			var sc StatementCount
			var ms float64
			var fpi int64
			if err := rows.Scan(&sc.Calls, &ms, &sc.WALBytes, &fpi, &sc.Blocks, &sc.Query); err != nil {
				t.Fatalf("pgtest: meter: %v", err)
			}
			sc.Time = time.Duration(ms * float64(time.Millisecond))
			out.Statements += sc.Calls
			out.WALBytes += sc.WALBytes
			out.WALFullPages += fpi
			if q := strings.ToLower(strings.TrimSpace(sc.Query)); strings.HasPrefix(q, "begin") || strings.HasPrefix(q, "start transaction") {
				out.Begins += sc.Calls
			}
			out.ByStatement = append(out.ByStatement, sc)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("pgtest: meter: %v", err)
		}
	}
	if m.srv != nil {
		if err := m.countLog(&out); err != nil {
			t.Logf("pgtest: meter: the server's log: %v", err)
		}
	}
	return out
}

// countLog counts the database's lock waits, deadlocks and serialisation failures in
// what the server logged since the meter started.
func (m *Meter) countLog(out *Counts) error {
	f, err := os.Open(m.srv.logPath())
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(m.log0, io.SeekStart); err != nil {
		return err
	}
	out.LockWaits, out.RowLockWaits, out.Deadlocks, out.SerializationFailures = 0, 0, 0, 0
	out.Waited = map[string]int{}
	tag := " db=" + m.dbname + " "
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	waiting := "" // the lock the last lock wait of the database waited for
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, tag) {
			continue
		}
		if waiting != "" && strings.Contains(line, "STATEMENT:") {
			_, q, _ := strings.Cut(line, "STATEMENT:")
			out.Waited[waiting+": "+strings.Join(strings.Fields(q), " ")]++
			waiting = ""
		}
		switch {
		case strings.Contains(line, "LOG:") && strings.Contains(line, "still waiting for"):
			out.LockWaits++
			_, w, _ := strings.Cut(line, "still waiting for ")
			w, _, _ = strings.Cut(w, " after ")
			waiting = w
			if strings.Contains(w, " on transaction ") || strings.Contains(w, " on tuple ") {
				out.RowLockWaits++
			}
		case strings.Contains(line, "ERROR:") && strings.Contains(line, "deadlock detected"):
			out.Deadlocks++
		case strings.Contains(line, "ERROR:") && strings.Contains(line, "could not serialize access"):
			out.SerializationFailures++
		}
	}
	return sc.Err()
}

// Report reports the counts per unit of work (n units) as benchmark metrics:
// statements/UNIT, begins/UNIT, wal-bytes/UNIT and wal-fpi/UNIT (full-page images), write-tx/UNIT, pg-cpu-µs/UNIT, and the totals of
// lock waits (of which row-lock-waits), deadlocks and serialisation failures. With SCRIPTHOST_BENCH_SQL set to a
// file, it appends to it the statements by text, per unit, and those that waited for
// a lock.
func (c Counts) Report(b *testing.B, n int, unit string) {
	if n <= 0 {
		return
	}
	per := func(v int64) float64 { return float64(v) / float64(n) }
	if c.Statements >= 0 {
		b.ReportMetric(per(c.Statements), "statements/"+unit)
		b.ReportMetric(per(c.Begins), "begins/"+unit)
		b.ReportMetric(per(c.WALBytes), "wal-bytes/"+unit)
		b.ReportMetric(per(c.WALFullPages), "wal-fpi/"+unit)
	}
	b.ReportMetric(per(c.WriteTx), "write-tx/"+unit)
	if c.ServerCPU >= 0 {
		b.ReportMetric(float64(c.ServerCPU.Microseconds())/float64(n), "pg-cpu-µs/"+unit)
	}
	if c.LockWaits >= 0 {
		b.ReportMetric(float64(c.LockWaits), "lock-waits")
		b.ReportMetric(float64(c.RowLockWaits), "row-lock-waits")
		b.ReportMetric(float64(c.Deadlocks), "deadlocks")
		b.ReportMetric(float64(c.SerializationFailures), "serialization-failures")
	}
	if path := os.Getenv("SCRIPTHOST_BENCH_SQL"); path != "" {
		var sb strings.Builder
		for _, s := range c.ByStatement {
			fmt.Fprintf(&sb, "%8.2f %7.0fµs %7.0fB  %s\n", per(s.Calls), float64(s.Time.Microseconds())/float64(n), per(s.WALBytes), strings.Join(strings.Fields(s.Query), " "))
		}
		for q, k := range c.Waited {
			fmt.Fprintf(&sb, "lock waits: %d  %s\n", k, q)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			b.Fatalf("pgtest: SCRIPTHOST_BENCH_SQL: %v", err)
		}
		defer f.Close()
		fmt.Fprintf(f, "%s: statements per %s (N=%d):\n%s\n", b.Name(), unit, n, sb.String())
	}
}

func (s *Server) logPath() string { return filepath.Join(s.dir, "log") }

// CPUTime is the CPU time (user and system) the server's processes used so far: the
// postmaster's, its live children's and, as the postmaster reaped them, its exited
// children's.
func (s *Server) CPUTime() time.Duration {
	b, err := os.ReadFile(filepath.Join(s.data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return 0
	}
	var ticks int64
	if st, ok := procStat(pid); ok {
		ticks += st.utime + st.stime + st.cutime + st.cstime
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	sort.Strings(procs)
	for _, p := range procs {
		child, err := strconv.Atoi(filepath.Base(p))
		if err != nil || child == pid {
			continue
		}
		if st, ok := procStat(child); ok && st.ppid == int64(pid) {
			ticks += st.utime + st.stime
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times (100 on
// every Linux architecture Go runs on).
const clockTicks = 100

type stat struct{ ppid, utime, stime, cutime, cstime int64 }

// procStat reads the parent and the CPU times of a process from /proc/PID/stat.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return stat{}, false
	}
	// The command name, in parentheses, may hold spaces: fields count from its end.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return stat{}, false
	}
	num := func(k int) int64 { v, _ := strconv.ParseInt(f[k], 10, 64); return v }
	// After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14).
	return stat{ppid: num(1), utime: num(11), stime: num(12), cutime: num(13), cstime: num(14)}, true
}
