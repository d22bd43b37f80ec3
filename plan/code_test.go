package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/codetool"
)

// codeEnv is an env whose workspace holds a small Go module, with the code tools
// registered and serving the code preconditions.
func codeEnv(t *testing.T, cfg codetool.Config) (*env, *codetool.Tools) {
	t.Helper()
	e := newEnv(t, envOpts{})
	for name, content := range map[string]string{
		"go.mod":  "module example.com/m\n\ngo 1.22\n",
		"a.go":    "package m\n\n// F is f.\nfunc F() int { return 1 }\n\ntype T struct{}\n\nfunc (T) M() {}\n",
		"sub/x.y": "not a project\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(e.dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Workspace = e.ws
	tools, err := codetool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tools.Close() })
	if err := e.reg.Register(tools.PlanTools()...); err != nil {
		t.Fatal(err)
	}
	return e, tools
}

func TestCodePreconditions(t *testing.T) {
	tests := []struct {
		name    string
		pc      string
		indexed bool
		want    string
	}{
		{"project dir", `{'project_exists':'.'}`, false, ""},
		{"project marker", `{'project_exists':'go.mod'}`, false, ""},
		{"no project", `{'project_exists':'sub'}`, false, CodeE102ProjectMissing},
		{"no cargo project", `{'project_exists':'Cargo.toml'}`, false, CodeE102ProjectMissing},
		{"index missing", `{'codegraph_exists':true}`, false, CodeE103IndexMissing},
		{"index built", `{'codegraph_exists':true}`, true, ""},
		{"symbol in file", `{'symbol_exists':{'file':'a.go','symbol':'F'}}`, false, ""},
		{"method anywhere", `{'symbol_exists':{'symbol':'T.M'}}`, false, ""},
		{"symbol missing", `{'symbol_exists':{'symbol':'Nope'}}`, false, CodeE104SymbolMissing},
		{"symbol in missing file", `{'symbol_exists':{'file':'b.go','symbol':'F'}}`, false, CodeE101FileMissing},
		{"symbol path escapes", `{'symbol_exists':{'file':'../x.go','symbol':'F'}}`, false, CodeE302OutsideSandbox},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, tools := codeEnv(t, codetool.Config{})
			if tt.indexed {
				if _, err := tools.Defined(context.Background(), "", "F"); err != nil {
					t.Fatal(err)
				}
			}
			p := mustPlan(t, `{'plan_id':'pc','intent':'x','steps':[
			 {'step_id':'a','tool':'file_write','arguments':{'path':'out.txt','content':'a'},'precondition':`+tt.pc+`}]}`)
			_, err := e.run(p, Options{Symbols: tools})
			if got := CodeOf(err); got != tt.want {
				t.Fatalf("got %q (%v), want %q", got, err, tt.want)
			}
			if e.exists("out.txt") != (tt.want == "") {
				t.Fatalf("tool called: %v, want %v", e.exists("out.txt"), tt.want == "")
			}
		})
	}
}

func TestCheckerUnavailableIsE304(t *testing.T) {
	e, tools := codeEnv(t, codetool.Config{LookPath: func(string) (string, error) { return "", errors.New("not installed") }})
	p := mustPlan(t, `{'plan_id':'chk','intent':'check','steps':[{'step_id':'check','tool':'lsp_check','arguments':{'path':'.'}}]}`)
	_, err := e.run(p, Options{Symbols: tools})
	if CodeOf(err) != CodeE304CheckerMissing || !strings.Contains(err.Error(), "cannot run") {
		t.Fatalf("got %v, want E304", err)
	}
}

// TestAliasesAndElevenTools: the eleven tool names plans use resolve, aliases to the
// file tools included.
func TestAliasesAndElevenTools(t *testing.T) {
	e, _ := codeEnv(t, codetool.Config{})
	for _, name := range []string{"read_file", "write_file", "create_file", "search_files", "glob_files", "run_command",
		"splice_patch", "splice_plan", "symbols_in_file", "references_to_symbol_name", "references_from_file_to_symbol_name", "lsp_check"} {
		ns, m := ToolName(name)
		if _, ok := e.reg.Lookup(ns, m); !ok {
			t.Errorf("%s: not registered", name)
		}
	}
}

func TestEvidenceHasIntentAndDiagnostics(t *testing.T) {
	e := newEnv(t, envOpts{})
	check := &hostfuncs.Tool{Namespace: "test", Method: "check", ReadOnly: hostfuncs.ReadOnlyAlways,
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"checker":"go build","exit_code":1,"ok":false,"diagnostics":[{"level":"error","message":"cannot use \"one\" (untyped string constant) as float64 value in return statement","file":"a.go","line":4,"column":9,"code":"IncompatibleAssign"}]}`), nil
		}}
	if err := e.reg.Register(check); err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, `{'plan_id':'ev','intent':'make Area faster','steps':[{'step_id':'c','description':'type-check','tool':'test.check'}]}`)
	res, err := e.run(p, Options{})
	if CodeOf(err) != CodeE301StepFailed {
		t.Fatalf("got %v, want E301: a checker reporting errors fails the step", err)
	}
	if len(res.Steps) != 1 || len(res.Steps[0].Diagnostics) != 1 || res.Steps[0].Diagnostics[0].Line != 4 {
		t.Fatalf("step diagnostics: got %+v", res.Steps)
	}
	recs := e.records("ev/1")
	var d Diagnostics
	if err := json.Unmarshal(recs[0].Diagnostics, &d); err != nil {
		t.Fatal(err)
	}
	want := Artifact{Kind: ArtifactDiagnostic, Checker: "go build", Level: "error", File: "a.go", Line: 4, Column: 9, Code: "IncompatibleAssign",
		Message: `cannot use "one" (untyped string constant) as float64 value in return statement`}
	if d.Intent != "make Area faster" || d.Description != "type-check" || len(d.Artifacts) != 1 || d.Artifacts[0] != want {
		t.Fatalf("evidence: got %+v", d)
	}
}

// TestResultJSONRoundTrip: a result serializes stdout, stderr, durations and
// diagnostics, and reads back equal.
func TestResultJSONRoundTrip(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := mustPlan(t, `{'plan_id':'rt','intent':'round trip','steps':[
	 {'step_id':'w','tool':'file_write','arguments':{'path':'a.txt','content':'a'}},
	 {'step_id':'e','tool':'run_command','arguments':{'program':'sh','args':['-c','echo out; echo err >&2']}}]}`)
	res, err := e.run(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Without HTML escaping, as the CLI prints JSON: escaping would rewrite the "<"
	// and "&" of the stored arguments inside their raw JSON.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	for _, want := range []string{`"total_duration_ms":`, `"stdout":"out\n"`, `"stderr":"err\n"`, `"duration_ms":`, `"started_at":`, `"intent":"round trip"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*res, back) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", back, *res)
	}
}

// TestStepTimesNeverGoBackwards: whatever the wall clock does (it is set back by
// random amounts here), each step ends at or after it starts, starts at or after the
// previous step ended, and the total duration is not negative.
func TestStepTimesNeverGoBackwards(t *testing.T) {
	for seed := int64(1); seed <= 25; seed++ {
		rng := rand.New(rand.NewSource(seed))
		var mu sync.Mutex
		now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(time.Duration(rng.Intn(2000)-1200) * time.Millisecond)
			return now
		}
		e := newEnv(t, envOpts{})
		n := 2 + rng.Intn(5)
		var steps []string
		for i := range n {
			steps = append(steps, `{'step_id':'s`+string(rune('a'+i))+`','tool':'file_write','arguments':{'path':'f`+string(rune('a'+i))+`.txt','content':'x'}}`)
		}
		p := mustPlan(t, `{'plan_id':'mono','intent':'x','steps':[`+strings.Join(steps, ",")+`]}`)
		res, err := e.run(p, Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if res.TotalDurationMS < 0 {
			t.Fatalf("seed %d: total_duration_ms %d", seed, res.TotalDurationMS)
		}
		var prevEnd time.Time
		for _, r := range e.records("mono/1") {
			if r.EndedAt.Before(r.StartedAt) || r.StartedAt.Before(prevEnd) || r.DurationMS < 0 {
				t.Fatalf("seed %d: step %s runs %s → %s after a step ending %s", seed, r.StepID, r.StartedAt, r.EndedAt, prevEnd)
			}
			prevEnd = r.EndedAt
		}
	}
}

// TestSpliceCrashReconciled kills a real child process with SIGKILL right after
// splice_patch replaced the file and before its outcome was recorded; the next run
// reconciles the in-flight mutation by content hash as applied and does not patch
// again.
func TestSpliceCrashReconciled(t *testing.T) {
	e, _ := codeEnv(t, codetool.Config{})
	if err := os.WriteFile(filepath.Join(e.dir, "c.go"), []byte("package m\n\nfunc G() int { return 1 }"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := `{"plan_id":"splice","intent":"patch G","steps":[
	 {"step_id":"patch","tool":"splice_patch","arguments":{"file":"c.go","symbol":"G","content":"func G() int { return 2 }\n\n"}},
	 {"step_id":"after","tool":"file_write","arguments":{"path":"after.txt","content":"x"}}]}`
	runUntilKilled(t, e, doc, "plan.splice_patch")
	muts, err := e.store.Mutations(context.Background(), mutFilter("splice"))
	if err != nil || len(muts) != 1 || muts[0].Status != scripthost.MutationInFlight {
		t.Fatalf("after the crash: got %+v, %v; want one in-flight mutation", muts, err)
	}
	res, err := e.run(mustPlan(t, doc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed || len(res.Steps) != 2 || !res.Steps[0].Reused {
		t.Fatalf("got %+v, want the patch step reused from the reconciled mutation", res.Steps)
	}
	muts, _ = e.store.Mutations(context.Background(), mutFilter("splice"))
	if len(muts) != 2 || muts[0].Status != scripthost.MutationApplied {
		t.Fatalf("got %+v, want the one mutation reconciled as applied", muts)
	}
	got, _ := os.ReadFile(filepath.Join(e.dir, "c.go"))
	if string(got) != "package m\n\nfunc G() int { return 2 }\n" {
		t.Fatalf("c.go: %q", got)
	}
}

// TestResumedStepsStartAfterRecordedOnes: a run resumed with a clock set back (here to
// 2001) still gives its new steps times after the steps the crashed run recorded.
func TestResumedStepsStartAfterRecordedOnes(t *testing.T) {
	e := newEnv(t, envOpts{programs: crashPrograms(gateScript(t))})
	doc := `{"plan_id":"late","intent":"resume with a clock set back","steps":[
	 {"step_id":"a","tool":"run_command","arguments":{"program":"sh","args":["-c","true"]}},
	 {"step_id":"b","tool":"file_write","arguments":{"path":"b.txt","content":"b"}},
	 {"step_id":"c","tool":"file_write","arguments":{"path":"c.txt","content":"c"}}]}`
	runUntilKilled(t, e, doc, "plan.file_write")
	past := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		past = past.Add(time.Millisecond)
		return past
	}
	res, err := e.run(mustPlan(t, doc), Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("got a new execution, want the crashed one resumed")
	}
	recs := e.records("late/1")
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3", len(recs))
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].StartedAt.Before(recs[i-1].EndedAt) {
			t.Errorf("step %s starts %s, before step %s ended %s", recs[i].StepID, recs[i].StartedAt, recs[i-1].StepID, recs[i-1].EndedAt)
		}
	}
}
