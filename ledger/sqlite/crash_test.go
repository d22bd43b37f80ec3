package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// The test binary doubles as the child process of the crash and lock tests: with
// childEnv set it plays the child's part and never runs the tests.
const (
	childEnv = "SCRIPTHOST_LEDGER_CHILD"
	dbEnv    = "SCRIPTHOST_LEDGER_DB"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "inflight":
		childInFlight(os.Getenv(dbEnv), false)
	case "applied":
		childInFlight(os.Getenv(dbEnv), true)
	case "lock":
		childLock(os.Getenv(dbEnv))
	default:
		fmt.Fprintln(os.Stderr, "unknown child", os.Getenv(childEnv))
		os.Exit(2)
	}
}

func childFail(err error) {
	fmt.Fprintln(os.Stderr, "child:", err)
	os.Exit(3)
}

// childInFlight drives a run to an in_flight mutation, or with apply to its applied
// outcome (a commit that does not wait for the disk), says so, and waits to be killed.
func childInFlight(path string, apply bool) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		childFail(err)
	}
	if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: "w", Topic: "in", MessageID: "e1", Payload: json.RawMessage(`{}`)}); err != nil {
		childFail(err)
	}
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "w", Version: 1, Handler: "h", Kind: scripthost.KindConsumer})
	if err == nil {
		_, err = s.AdvancePhase(ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing)
	}
	if err == nil {
		_, err = s.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{"e1"}}}})
	}
	if err == nil {
		_, err = s.AdvancePhase(ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating)
	}
	if err != nil {
		childFail(err)
	}
	m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Shop", Method: "ship",
		Params: json.RawMessage(`{"order":1}`), InputHash: "ih", IdempotencyKey: "key-1"})
	if err != nil {
		childFail(err)
	}
	if apply {
		if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{"shipped":true}`)); err != nil {
			childFail(err)
		}
		fmt.Printf("applied %s\n", m.ID)
		time.Sleep(time.Hour) // the parent kills us here, before the next phase
	}
	fmt.Printf("inflight %s\n", m.ID)
	time.Sleep(time.Hour) // the parent kills us here, where the tool call would be
}

// childLock holds the database's write lock until it is killed.
func childLock(path string) {
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		childFail(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		childFail(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		childFail(err)
	}
	fmt.Println("locked")
	time.Sleep(time.Hour)
}

// startChild starts the test binary as child role on path and returns it after it
// printed its first line, which is returned too.
func startChild(t *testing.T, role, path string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, dbEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child %s: no line: %v", role, err)
	}
	return cmd, strings.TrimSpace(line)
}

// killChild runs the child role on a new ledger until it says "role <id>", kills it
// with SIGKILL, and returns the ledger opened again and the id.
func killChild(t *testing.T, role string) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	cmd, line := startChild(t, role, path)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: got %v, want killed by SIGKILL", err)
	}
	id, ok := strings.CutPrefix(line, role+" ")
	if !ok {
		t.Fatalf("child said %q, want %s <id>", line, role)
	}
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, id
}

// TestKillAfterInFlight kills a process right after it recorded an in-flight mutation
// and checks the row is on disk and listed for recovery.
func TestKillAfterInFlight(t *testing.T) {
	s, id := killChild(t, "inflight")
	ctx := context.Background()
	m, err := s.Mutation(ctx, id)
	if err != nil {
		t.Fatalf("in-flight mutation after the kill: %v", err)
	}
	if m.Status != scripthost.MutationInFlight || m.IdempotencyKey != "key-1" || string(m.Params) != `{"order":1}` {
		t.Errorf("got %s key %q params %s, want the in_flight row as written", m.Status, m.IdempotencyKey, m.Params)
	}
	rec, err := s.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.InFlight) != 1 || rec.InFlight[0].ID != id {
		t.Errorf("recovery: got %d in-flight mutations, want %s", len(rec.InFlight), id)
	}
	if len(rec.Runs) != 1 || rec.Runs[0].ID != m.RunID || rec.Runs[0].Phase != scripthost.RunMutating {
		t.Errorf("recovery: got runs %+v, want run %s at mutating", rec.Runs, m.RunID)
	}
	evs, err := s.Events(ctx, ledger.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Status != scripthost.EventReserved || evs[0].ReservedBy != m.RunID {
		t.Errorf("events: got %+v, want e1 still reserved by the run", evs)
	}
}

// TestKillAfterOutcome kills a process right after it recorded a mutation's outcome,
// a commit that does not wait for the disk: a process crash must not lose it, since
// the commit is in the WAL file (if not yet on the disk) when the write returns.
func TestKillAfterOutcome(t *testing.T) {
	s, id := killChild(t, "applied")
	ctx := context.Background()
	m, err := s.Mutation(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != scripthost.MutationApplied || string(m.Result) != `{"shipped":true}` {
		t.Errorf("got %s with result %s, want applied with the result written", m.Status, m.Result)
	}
	r, err := s.Run(ctx, m.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Phase != scripthost.RunEmitting {
		t.Errorf("run at %s, want emitting (moved on by the outcome)", r.Phase)
	}
}
