// Package pgtest gives tests their own PostgreSQL database: on the server that
// SCRIPTHOST_TEST_PG names (a postgres:// URL of a role that may create databases), or
// else on a throwaway server it starts from the local PostgreSQL binaries (Debian's
// /usr/lib/postgresql/N/bin, or initdb on PATH) with its own data directory, listening
// on loopback only. With neither, the tests that need one are skipped, saying why.
//
// A package that uses it calls Main from its TestMain, so that the server it started
// is stopped when the package's tests end.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that points the tests at an existing server.
const Env = "SCRIPTHOST_TEST_PG"

var (
	once    sync.Once
	base    string // URL of the maintenance database
	srv     *Server
	skipMsg string
)

// Main runs the package's tests and stops the server they started, if any, then runs
// the package's own clean-up, after.
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	for _, f := range after {
		f()
	}
	os.Exit(code)
}

// Available reports whether a server is reachable, starting one if needed, and why
// not otherwise.
func Available() (string, bool) {
	once.Do(setup)
	return skipMsg, base != ""
}

// URL creates a fresh, empty database for the test and returns its URL; the database
// is dropped when the test ends. Without a server the test is skipped.
func URL(t testing.TB) string {
	t.Helper()
	if msg, ok := Available(); !ok {
		if _, bench := t.(*testing.B); bench {
			// go test -bench prints no skips: say it, in the form benchtable reads.
			fmt.Printf("--- SKIP: %s: %s\n", t.Name(), msg)
		}
		t.Skip(msg)
	}
	name := "scripthost_test_" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admin(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	return withDatabase(base, name)
}

// NewServer starts a throwaway server of the test's own, which the test may stop and
// start (chaos tests), and stops it when the test ends. Without PostgreSQL binaries
// the test is skipped.
func NewServer(t testing.TB) *Server {
	t.Helper()
	bin := findBin()
	if bin == "" {
		t.Skip("PostgreSQL tests skipped: this test starts its own server and no initdb was found (install PostgreSQL)")
	}
	s, err := start(bin)
	if err != nil {
		t.Fatalf("pgtest: start a server from %s: %v", bin, err)
	}
	t.Cleanup(s.stop)
	return s
}

// URL returns the URL of a database on the server, creating it.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "scripthost_test_" + randomHex(6)
	c, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return withDatabase(s.url, name)
}

func admin(ctx context.Context, sql string) error {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, sql)
	return err
}

func withDatabase(u, db string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Path = "/" + db
	return p.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func setup() {
	if u := os.Getenv(Env); u != "" {
		base = u
		return
	}
	bin := findBin()
	if bin == "" {
		skipMsg = "PostgreSQL tests skipped: set " + Env + "=postgres://USER@HOST:PORT/DB or install PostgreSQL (no initdb found)"
		return
	}
	s, err := start(bin)
	if err != nil {
		skipMsg = "PostgreSQL tests skipped: starting a throwaway server from " + bin + " failed: " + err.Error()
		return
	}
	srv, base = s, s.url
}

// DefaultServer returns the throwaway server the package's tests share, or nil when
// they use the one Env names (or none).
func DefaultServer() *Server {
	once.Do(setup)
	return srv
}

// findBin returns the directory of initdb and pg_ctl, newest version first.
func findBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// Server is a throwaway PostgreSQL server.
type Server struct {
	bin, dir, data string
	port           int
	url            string
	asUser         string // run the server's programs as this user (PostgreSQL refuses root)
}

func start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "scripthost-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.asUser = "postgres"
	}
	if s.port, err = freePort(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if out, err := s.cmd("initdb", "-D", s.data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	if err := s.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) cmd(prog string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, prog)
	if s.asUser != "" {
		return exec.Command("runuser", append([]string{"-u", s.asUser, "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

// Start starts the server (again) and waits until it accepts connections.
func (s *Server) Start() error {
	opts := strings.Join([]string{
		"-c listen_addresses=127.0.0.1", "-p " + strconv.Itoa(s.port), "-k " + s.dir,
		"-c max_connections=400", "-c fsync=on",
		// The benchmarks count statements server-side (see Meter), and log the lock
		// waits longer than deadlock_timeout, which Meter counts from the log.
		"-c shared_preload_libraries=pg_stat_statements", "-c pg_stat_statements.track=top",
		"-c log_lock_waits=on", "-c deadlock_timeout=" + lockWaitLogged, "-c log_line_prefix='%m [%p] db=%d '",
	}, " ")
	out, err := s.cmd("pg_ctl", "-D", s.data, "-l", filepath.Join(s.dir, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl start: %v: %s", err, out)
	}
	return nil
}

// Stop stops the server at once (fast mode: open connections are closed).
func (s *Server) Stop() error {
	out, err := s.cmd("pg_ctl", "-D", s.data, "-m", "fast", "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

// Kill stops the server as a crash would (immediate mode: no shutdown checkpoint).
func (s *Server) Kill() error {
	out, err := s.cmd("pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop").CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %v: %s", err, out)
	}
	return nil
}

func (s *Server) stop() {
	_ = s.Stop()
	os.RemoveAll(s.dir)
}
