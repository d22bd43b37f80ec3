package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

var (
	crashBinOnce sync.Once
	crashBin     string
	crashBinErr  error
)

// crashBinary builds the CLI once for the tests that kill it.
func crashBinary(t *testing.T) string {
	t.Helper()
	crashBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scripthost-crash-")
		if err != nil {
			crashBinErr = err
			return
		}
		crashBin = filepath.Join(dir, "scripthost")
		out, err := exec.Command("go", "build", "-o", crashBin, ".").CombinedOutput()
		if err != nil {
			crashBinErr = errors.New(string(out))
		}
	})
	if crashBinErr != nil {
		t.Fatalf("build: %v", crashBinErr)
	}
	return crashBin
}

// TestCrashAtEveryPhaseBoundary kills the real CLI with SIGKILL at each phase boundary
// of the files example (and around the mutating tool call), restarts it until it
// finishes, and checks that every input event was processed exactly once, every output
// file written once, and no run is left stuck.
func TestCrashAtEveryPhaseBoundary(t *testing.T) {
	bin := crashBinary(t)
	wf, _ := filepath.Abs("../../scripts/files/workflow.js")
	points := []string{
		"producer:created", "producer:after:pending", "producer:after:executing",
		"consumer:created", "consumer:after:pending", "consumer:after:preparing", "consumer:after:prepared",
		"consumer:after:mutating", "consumer:after:mutated", "consumer:after:emitting",
		"tool:before-execute", "tool:after-execute",
	}
	inputs := map[string]string{"a.txt": "alpha", "b.txt": "beta", "c.txt": "gamma"}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ws := filepath.Join(dir, "ws")
			for name, content := range inputs {
				putFile(t, filepath.Join(ws, "inbox", name), content)
			}
			db := filepath.Join(dir, "ledger.db")
			inodes := map[string]uint64{}
			kills := 0
			for attempt := 0; ; attempt++ {
				if attempt > 30 {
					t.Fatalf("still crashing after %d restarts", attempt)
				}
				cmd := exec.Command(bin, "--db", db, "run", wf, "--once", "--workspace", ws)
				// Killing before the tool runs leaves nothing done, so the mutation is
				// reconciled as failed and tried again; arm that point only once or no
				// attempt could ever finish.
				if attempt == 0 || point != "tool:before-execute" {
					cmd.Env = append(os.Environ(), failpointEnv+"="+point)
				}
				out, err := cmd.CombinedOutput()
				// Remember each output file as first seen: a rewrite (atomic rename)
				// would give it a new inode.
				entries, _ := os.ReadDir(filepath.Join(ws, "outbox"))
				for _, e := range entries {
					if fi, err := os.Stat(filepath.Join(ws, "outbox", e.Name())); err == nil {
						ino := fi.Sys().(*syscall.Stat_t).Ino
						if first, ok := inodes[e.Name()]; ok && first != ino {
							t.Errorf("outbox/%s written twice (inode %d then %d)", e.Name(), first, ino)
						}
						inodes[e.Name()] = ino
					}
				}
				if err == nil {
					break
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
					t.Fatalf("run failed without the failpoint's kill: %v\n%s", err, out)
				}
				kills++
			}
			if kills == 0 {
				t.Fatalf("failpoint %s was never hit", point)
			}

			for name, content := range inputs {
				got, err := os.ReadFile(filepath.Join(ws, "outbox", name))
				if err != nil || string(got) != strings.ToUpper(content) {
					t.Errorf("outbox/%s: got %q %v, want %q", name, got, err, strings.ToUpper(content))
				}
			}
			st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ctx := context.Background()
			ms, _ := st.Mutations(ctx, ledger.MutationFilter{})
			perKey := map[string]int{}
			for _, m := range ms {
				switch {
				case m.Status == scripthost.MutationApplied:
					perKey[string(m.Params)]++
				case m.Status == scripthost.MutationFailed && strings.Contains(m.Error, hostfuncs.ReconciledFailed):
					// The call never happened and reconciliation said so: the kill came
					// between the in-flight write and the call. Runs are driven in
					// parallel, so any failpoint can land there for another run.
				default:
					t.Errorf("mutation %s: got %s, want applied", m.ID, m.Status)
				}
			}
			if len(perKey) != len(inputs) {
				t.Errorf("applied mutations: got %d, want %d (one per file)", len(perKey), len(inputs))
			}
			for p, n := range perKey {
				if n != 1 {
					t.Errorf("params %s recorded %d times, want once", p, n)
				}
			}
			evs, _ := st.Events(ctx, ledger.EventFilter{Topic: "files"})
			if len(evs) != len(inputs) {
				t.Errorf("file events: got %d, want %d", len(evs), len(inputs))
			}
			for _, e := range evs {
				if e.Status != scripthost.EventConsumed {
					t.Errorf("event %s: got %s, want consumed", e.MessageID, e.Status)
				}
			}
			runs, _ := st.Runs(ctx, ledger.RunFilter{})
			committed := map[string]int{}
			for _, r := range runs {
				switch r.Status {
				case scripthost.StatusCommitted:
					committed[r.Handler]++
				case scripthost.StatusActive:
					t.Errorf("run %s %s stuck in %s", r.ID, r.Handler, r.Phase)
				}
			}
			if committed["process"] != len(inputs) || committed["scan"] != 1 {
				t.Errorf("committed runs: got %v, want 3 process and 1 scan", committed)
			}
			rec, _ := st.Recover(ctx)
			if len(rec.InFlight) != 0 {
				t.Errorf("in-flight mutations left: %v", rec.InFlight)
			}
		})
	}
}
