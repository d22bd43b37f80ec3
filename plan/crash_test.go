package plan

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/codetool"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// crashConfig is what the parent hands the child process that it will kill.
type crashConfig struct {
	DB, Dir, Plan, Events, Gate string
	// KillAfter names a tool (plan.file_write) after whose first call the child kills
	// itself, before the outcome is recorded.
	KillAfter string
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv("PLAN_CRASH_CHILD"); cfg != "" {
		os.Exit(crashChild(cfg))
	}
	os.Exit(m.Run())
}

// crashPrograms is the allowlist of the crash tests: waitgate is a script that blocks
// until the file "gate" exists in the workspace, and is marked read-only.
func crashPrograms(gate string) []command.Program {
	return []command.Program{{Name: "sh"}, {Name: "waitgate", Path: gate, ReadOnly: true}}
}

// crashChild runs a plan until the parent kills it.
func crashChild(raw string) int {
	var cfg crashConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return 90
	}
	ctx := context.Background()
	store, err := sqlite.Open(ctx, cfg.DB, sqlite.Options{})
	if err != nil {
		return 91
	}
	ws, err := workspace.New(cfg.Dir)
	if err != nil {
		return 92
	}
	cmds, err := command.New(command.Config{Workspace: ws, Programs: crashPrograms(cfg.Gate)})
	if err != nil {
		return 93
	}
	reg := hostfuncs.NewRegistry()
	code, err := codetool.New(codetool.Config{Workspace: ws})
	if err != nil {
		return 94
	}
	if reg.Register(ws.Tools()...) != nil || reg.Register(cmds.Tool()) != nil || reg.Register(code.PlanTools()...) != nil {
		return 94
	}
	if ns, m, ok := strings.Cut(cfg.KillAfter, "."); ok {
		if t, found := reg.Lookup(ns, m); found {
			exec := t.Execute
			t.Execute = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				_, _ = exec(ctx, in)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	doc, err := os.ReadFile(cfg.Plan)
	if err != nil {
		return 95
	}
	p, err := Parse(doc)
	if err != nil {
		return 96
	}
	events, err := os.Create(cfg.Events)
	if err != nil {
		return 97
	}
	x, err := New(Options{Store: store, Registry: reg, Workspace: ws, Commands: cmds, Events: events})
	if err != nil {
		return 98
	}
	if _, err := x.Run(ctx, p, approved(p)); err != nil {
		return 1
	}
	return 0
}

// startCrashChild runs the plan in a child process, waits until the event stream shows
// the tool call of step waitStep (and until file waitFile exists, when given), then
// kills the child with SIGKILL.
func startCrashChild(t *testing.T, e *env, planDoc, waitStep, waitFile string) {
	t.Helper()
	tmp := t.TempDir()
	cfg := crashConfig{DB: e.dbPath, Dir: e.dir, Plan: filepath.Join(tmp, "plan.json"), Events: filepath.Join(tmp, "events.jsonl"), Gate: gateScript(t)}
	if err := os.WriteFile(cfg.Plan, []byte(planDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLAN_CRASH_CHILD="+string(raw))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(cfg.Events)
		if toolCalled(string(b), waitStep) && (waitFile == "" || nonEmpty(filepath.Join(e.dir, waitFile))) {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("child exited before the crash point: %v\nevents:\n%s", err, b)
		default:
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("child did not reach step %s in time; events:\n%s", waitStep, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("got child exit %v, want killed", err)
	}
}

// runUntilKilled runs the plan in a child process that kills itself with SIGKILL
// right after the first call of the tool killAfter, before its outcome is recorded.
func runUntilKilled(t *testing.T, e *env, doc, killAfter string) {
	t.Helper()
	tmp := t.TempDir()
	cfg := crashConfig{DB: e.dbPath, Dir: e.dir, Plan: filepath.Join(tmp, "plan.json"), Events: filepath.Join(tmp, "events.jsonl"), Gate: gateScript(t), KillAfter: killAfter}
	if err := os.WriteFile(cfg.Plan, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLAN_CRASH_CHILD="+string(raw))
	if err := cmd.Run(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("got child exit %v, want killed", err)
	}
}

func nonEmpty(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.HasSuffix(string(b), "\n")
}

func toolCalled(events, step string) bool {
	for _, line := range strings.Split(events, "\n") {
		var ev Event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == EventToolCall && ev.StepID == step {
			return true
		}
	}
	return false
}

func gateScript(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "waitgate")
	script := "#!/bin/sh\nwhile [ ! -e gate ]; do sleep 0.02; done\necho gate open\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

const crashPlan = `{"plan_id":"crash","intent":"survive a crash","steps":[
 {"step_id":"log1","tool":"run_command","arguments":{"program":"sh","args":["-c","echo one >> log.txt"]}},
 {"step_id":"write","tool":"file_write","arguments":{"path":"a.txt","content":"a"}},
 {"step_id":"gate","tool":"run_command","arguments":{"program":"waitgate","args":[]}},
 {"step_id":"log2","tool":"run_command","arguments":{"program":"sh","args":["-c","echo two >> log.txt"]}},
 {"step_id":"write2","tool":"file_write","arguments":{"path":"b.txt","content":"b"}}]}`

// TestCrashAndResume kills a real child process in the middle of a plan with SIGKILL
// and resumes the plan: completed mutations are not repeated and the plan completes.
func TestCrashAndResume(t *testing.T) {
	e := newEnv(t, envOpts{programs: crashPrograms(gateScript(t))})
	startCrashChild(t, e, crashPlan, "gate", "")

	if recs := e.records("crash/1"); len(recs) != 2 || recs[0].StepID != "log1" || recs[1].StepID != "write" {
		t.Fatalf("got %d records after the crash, want log1 and write", len(recs))
	}
	if err := os.WriteFile(filepath.Join(e.dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.run(mustPlan(t, crashPlan), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || res.ExecutionID != "crash/1" {
		t.Errorf("got execution %s resumed=%v, want crash/1 resumed", res.ExecutionID, res.Resumed)
	}
	var reused []string
	for _, s := range res.Steps {
		if s.Reused {
			reused = append(reused, s.StepID)
		}
	}
	if strings.Join(reused, ",") != "log1,write" || len(res.Steps) != 5 {
		t.Errorf("got reused %v of %d steps, want log1,write of 5", reused, len(res.Steps))
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "log.txt")); string(b) != "one\ntwo\n" {
		t.Errorf("got log %q, want each command run once", b)
	}
	recs := e.records("crash/1")
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.StepID]++
	}
	if len(recs) != 5 || len(seen) != 5 {
		t.Errorf("got records %v, want one per step", seen)
	}
	muts, err := e.store.Mutations(context.Background(), mutFilter("crash"))
	if err != nil {
		t.Fatal(err)
	}
	if len(muts) != 4 {
		t.Errorf("got %d mutations, want 4 (the gate is read-only, none repeated)", len(muts))
	}
	for _, m := range muts {
		if m.Status != scripthost.MutationApplied {
			t.Errorf("got mutation %s %s, want applied", m.Handler, m.Status)
		}
	}
	// Running the finished plan again is a new execution.
	if res, err := e.run(mustPlan(t, crashPlan), Options{}); err != nil || res.ExecutionID != "crash/2" || res.Resumed {
		t.Errorf("got %v, %v, want a fresh crash/2", res, err)
	}
}

const inFlightPlan = `{"plan_id":"inflight","intent":"crash during a mutation","steps":[
 {"step_id":"write","tool":"file_write","arguments":{"path":"a.txt","content":"a"}},
 {"step_id":"long","tool":"run_command","arguments":{"program":"sh","args":["-c","echo started >> log.txt; echo $$ > pid; exec sleep 60"]}},
 {"step_id":"after","tool":"file_write","arguments":{"path":"b.txt","content":"b"}}]}`

// TestCrashDuringMutation kills the child while a mutation is in flight: the resumed
// plan must not run it again but stop for reconciliation, and continue once a person
// resolved it.
func TestCrashDuringMutation(t *testing.T) {
	e := newEnv(t, envOpts{programs: crashPrograms(gateScript(t))})
	startCrashChild(t, e, inFlightPlan, "long", "pid")
	// The command runs in its own process group, which the child's death does not end.
	if b, err := os.ReadFile(filepath.Join(e.dir, "pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}

	res, err := e.run(mustPlan(t, inFlightPlan), Options{})
	if CodeOf(err) != CodeE306NeedsReconcile {
		t.Fatalf("got %v, want %s", err, CodeE306NeedsReconcile)
	}
	if !res.Resumed || len(res.Steps) != 1 || !res.Steps[0].Reused {
		t.Errorf("got %+v, want the resumed execution stopped after the reused first step", res)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "log.txt")); string(b) != "started\n" {
		t.Errorf("got log %q, want the in-flight command not run again", b)
	}
	if e.exists("b.txt") {
		t.Error("got the later step run, want the plan stopped")
	}
	muts, err := e.store.Mutations(context.Background(), ledger.MutationFilter{Workflow: "plan:inflight", Status: scripthost.MutationIndeterminate})
	if err != nil || len(muts) != 1 {
		t.Fatalf("got %d indeterminate mutations (%v), want 1", len(muts), err)
	}
	if _, err := e.store.Resolve(context.Background(), muts[0].ID, ledger.Resolution{As: scripthost.MutationApplied, Result: json.RawMessage(`{"exit_code":0,"stdout":"","stderr":"","timed_out":false}`), By: "operator"}); err != nil {
		t.Fatal(err)
	}
	res, err = e.run(mustPlan(t, inFlightPlan), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExecutionID != "inflight/1" || stepIDs(res) != "write:succeeded,long:succeeded,after:succeeded" || !e.exists("b.txt") {
		t.Errorf("got %s %s, want inflight/1 completed", res.ExecutionID, stepIDs(res))
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "log.txt")); string(b) != "started\n" {
		t.Errorf("got log %q, want the resolved command not run again", b)
	}
}

// TestCrashAfterCallBeforeRecord kills the child after a write happened but before its
// outcome was recorded: on resume the in-flight mutation is reconciled by the file
// tool's reconciler as applied, and the write is not made again.
func TestCrashAfterCallBeforeRecord(t *testing.T) {
	e := newEnv(t, envOpts{})
	doc := `{"plan_id":"lost","intent":"lose an outcome","steps":[
	 {"step_id":"a","tool":"file_write","arguments":{"path":"a.txt","content":"a"}},
	 {"step_id":"b","tool":"file_write","arguments":{"path":"b.txt","content":"b"}}]}`
	runUntilKilled(t, e, doc, "plan.file_write")
	if !e.exists("a.txt") || e.exists("b.txt") || len(e.records("lost")) != 0 {
		t.Fatal("got the wrong state after the crash, want a.txt written and nothing recorded")
	}
	muts, err := e.store.Mutations(context.Background(), mutFilter("lost"))
	if err != nil || len(muts) != 1 || muts[0].Status != scripthost.MutationInFlight {
		t.Fatalf("got mutations %+v (%v), want one in flight", muts, err)
	}

	write, _ := e.reg.Lookup("plan", "file_write")
	calls := map[string]int{}
	exec := write.Execute
	write.Execute = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var a struct{ Path string }
		_ = json.Unmarshal(in, &a)
		calls[a.Path]++
		return exec(ctx, in)
	}
	res, err := e.run(mustPlan(t, doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExecutionID != "lost/1" || !res.Steps[0].Reused || res.Steps[1].Reused {
		t.Errorf("got %s with steps %+v, want lost/1 with a reused", res.ExecutionID, res.Steps)
	}
	if calls["a.txt"] != 0 || calls["b.txt"] != 1 {
		t.Errorf("got calls %v, want a.txt not written again and b.txt once", calls)
	}
	muts, _ = e.store.Mutations(context.Background(), mutFilter("lost"))
	for _, m := range muts {
		if m.Status != scripthost.MutationApplied {
			t.Errorf("got mutation for %s %s, want applied", m.Handler, m.Status)
		}
	}
}
