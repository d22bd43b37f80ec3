package plan

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"

	"github.com/scripthost/scripthost/ledger"
)

const evidencePlan = `{'plan_id':'ev','intent':'exercise every field','steps':[
 {'step_id':'write','tool':'file_write','arguments':{'path':'notes/a.txt','content':'alpha\nbeta\n'}},
 {'step_id':'read','tool':'file_read','arguments':{'path':'notes/a.txt'},'depends_on':['write']},
 {'step_id':'cmd','tool':'run_command','arguments':{'program':'sh','args':['-c','echo out; echo err >&2']}},
 {'step_id':'search','tool':'file_search','arguments':{'pattern':'^b','glob':'**/*.txt'}},
 {'step_id':'fail','tool':'run_command','arguments':{'program':'sh','args':['-c','echo bad >&2; exit 7']}}]}`

func TestEvidenceComplete(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := mustPlan(t, evidencePlan)
	res, err := e.run(p, Options{})
	if CodeOf(err) != CodeE301StepFailed {
		t.Fatalf("got %v, want %s", err, CodeE301StepFailed)
	}
	if res.ExecutionID != "ev/1" || len(res.Steps) != 5 {
		t.Fatalf("got %s with %d steps, want ev/1 with 5", res.ExecutionID, len(res.Steps))
	}
	for i, sr := range res.Steps {
		// Every field of every executed step reads back by its execution id.
		got := e.records(sr.ExecutionID)
		if len(got) != 1 {
			t.Fatalf("%s: got %d records, want 1", sr.ExecutionID, len(got))
		}
		r := got[0]
		if !reflect.DeepEqual(r, sr.Record) {
			t.Errorf("%s: got %+v read back, want %+v", sr.ExecutionID, r, sr.Record)
		}
		if r.ExecutionID != fmt.Sprintf("ev/1/%s", p.Steps[i].StepID) || r.PlanID != "ev" || r.StepID != p.Steps[i].StepID ||
			r.Seq != i+1 || r.Tool != p.Steps[i].Tool || len(r.Arguments) == 0 || r.StartedAt.IsZero() ||
			!r.EndedAt.After(r.StartedAt) || r.DurationMS != r.EndedAt.Sub(r.StartedAt).Milliseconds() || len(r.Diagnostics) == 0 {
			t.Errorf("%s: got an incomplete record %+v", sr.ExecutionID, r)
		}
		var d Diagnostics
		if err := json.Unmarshal(r.Diagnostics, &d); err != nil || d.PlanHash != p.Hash() || d.ExecutionNumber != 1 || d.Attempts != 1 || d.AuthorizedBy != "alice" {
			t.Errorf("%s: got diagnostics %s, want hash, number, attempts and approver", sr.ExecutionID, r.Diagnostics)
		}
		if (d.Operation == "mutate") != (d.MutationID != "" && d.IdempotencyKey != "") {
			t.Errorf("%s: got diagnostics %s, want a mutation id and key exactly for mutations", sr.ExecutionID, r.Diagnostics)
		}
	}
	recs := e.records("ev/1")
	byStep := map[string]ledger.ExecutionRecord{}
	for _, r := range recs {
		byStep[r.StepID] = r
	}
	if r := byStep["cmd"]; r.Stdout != "out\n" || r.Stderr != "err\n" || r.ExitCode != 0 || !r.Success {
		t.Errorf("cmd: got %+v, want its stdout, stderr and exit code", r)
	}
	if r := byStep["read"]; string(r.Result) != `{"content":"alpha\nbeta\n"}` {
		t.Errorf("read: got result %s", r.Result)
	}
	if r := byStep["fail"]; r.Success || r.ExitCode != 7 || r.Stderr != "bad\n" || r.ErrorCode != CodeE301StepFailed || !strings.Contains(r.Error, "exited with code 7") {
		t.Errorf("fail: got %+v, want a failed record with exit code 7 and its error", r)
	}
	if r := byStep["write"]; string(r.Arguments) != `{"content":"alpha\nbeta\n","path":"notes/a.txt"}` {
		t.Errorf("write: got arguments %s, want canonical", r.Arguments)
	}
	// By plan, too.
	if all, err := e.store.Executions(context.Background(), ledger.ExecutionFilter{PlanID: "ev"}); err != nil || len(all) != 5 {
		t.Errorf("got %d records by plan (%v), want 5", len(all), err)
	}
}

func TestEventStream(t *testing.T) {
	e := newEnv(t, envOpts{})
	var progress []string
	p := mustPlan(t, `{'plan_id':'evs','intent':'x','steps':[
	 {'step_id':'a','tool':'file_write','arguments':{'path':'a.txt','content':'a'}},
	 {'step_id':'b','tool':'test.fail','arguments':{}}]}`)
	_, err := e.run(p, Options{Progress: Progress{
		StepStart: func(i StepInfo) {
			progress = append(progress, fmt.Sprintf("start %s %d/%d", i.StepID, i.Index, i.Total))
		},
		StepComplete: func(r StepResult) { progress = append(progress, "complete "+r.StepID) },
		StepFailed:   func(r StepResult) { progress = append(progress, "failed "+r.StepID+" "+r.Code) },
	}})
	if CodeOf(err) != CodeE301StepFailed {
		t.Fatalf("got %v, want %s", err, CodeE301StepFailed)
	}
	if got, want := strings.Join(progress, "; "), "start a 1/2; complete a; start b 2/2; failed b E301"; got != want {
		t.Errorf("got progress %q, want %q", got, want)
	}
	var types []string
	sc := bufio.NewScanner(strings.NewReader(e.events.String()))
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("got a line that is not one JSON object: %q", sc.Text())
		}
		types = append(types, ev.Type+":"+ev.StepID)
	}
	want := "step_start:a tool_call:a tool_result:a step_complete:a step_start:b tool_call:b tool_result:b step_failed:b plan_complete:"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("got events %s, want %s", got, want)
	}
}

func TestExecutionNumbersAndDeterminism(t *testing.T) {
	doc := `{'plan_id':'det','intent':'x','steps':[
	 {'step_id':'a','tool':'file_write','arguments':{'path':'a.txt','content':'a'}},
	 {'step_id':'b','tool':'run_command','arguments':{'program':'echo','args':['b']}}]}`
	run := func(e *env) []ledger.ExecutionRecord {
		res, err := e.run(mustPlan(t, doc), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e.records(res.ExecutionID)
	}
	e1, e2 := newEnv(t, envOpts{}), newEnv(t, envOpts{})
	first, other := run(e1), run(e2)
	// The same execution of the same plan gives the same ids and results, and
	// re-reading it gives the same records.
	if !reflect.DeepEqual(first, other) {
		t.Errorf("got different records for the same execution:\n%+v\n%+v", first, other)
	}
	if again := e1.records("det/1"); !reflect.DeepEqual(first, again) {
		t.Errorf("got different records on re-reading")
	}
	// A second execution of a finished plan is a new execution with new ids.
	second := run(e1)
	if second[0].ExecutionID != "det/2/a" || second[1].ExecutionID != "det/2/b" {
		t.Errorf("got %s, %s, want det/2/a, det/2/b", second[0].ExecutionID, second[1].ExecutionID)
	}
	if n := len(e1.records("det")); n != 4 {
		t.Errorf("got %d records of the plan, want 4", n)
	}
}

// TestPlanProperties runs random plans of succeeding, failing and blocked steps and
// checks the invariants: no more results than steps, unique execution ids, plan order
// kept, and the results end at the first failure unless failures may continue.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	e := newEnv(t, envOpts{})
	for n := range 40 {
		p := &Plan{PlanID: fmt.Sprintf("prop%d", n), Intent: "random"}
		steps := 1 + rng.IntN(7)
		for i := range steps {
			s := Step{StepID: fmt.Sprintf("s%d", i)}
			switch rng.IntN(4) {
			case 0:
				s.Tool, s.Arguments = "test.fail", json.RawMessage(`{}`)
			case 1:
				s.Tool, s.Arguments = "run_command", json.RawMessage(`{"program":"true","args":[]}`)
			default:
				s.Tool, s.Arguments = "file_write", json.RawMessage(fmt.Sprintf(`{"path":"p%d/s%d","content":"x"}`, n, i))
			}
			s.ContinueOnFailure = rng.IntN(3) == 0
			if i > 0 && rng.IntN(3) == 0 {
				s.DependsOn = []string{fmt.Sprintf("s%d", rng.IntN(i))}
			}
			p.Steps = append(p.Steps, s)
		}
		res, _ := e.executor(Options{}).Run(context.Background(), p, approved(p))
		if res == nil {
			t.Fatalf("plan %d: got no result", n)
		}
		if len(res.Steps) > len(p.Steps) {
			t.Fatalf("plan %d: got %d results for %d steps", n, len(res.Steps), len(p.Steps))
		}
		ids := map[string]bool{}
		failed := map[string]bool{}
		for i, sr := range res.Steps {
			if ids[sr.ExecutionID] {
				t.Fatalf("plan %d: got execution id %s twice", n, sr.ExecutionID)
			}
			ids[sr.ExecutionID] = true
			if sr.StepID != p.Steps[i].StepID {
				t.Fatalf("plan %d: got step %s at %d, want %s", n, sr.StepID, i, p.Steps[i].StepID)
			}
			for _, d := range p.Steps[i].DependsOn {
				if failed[d] && sr.Status != StepBlocked {
					t.Fatalf("plan %d: got %s %s after its dependency %s failed, want blocked", n, sr.StepID, sr.Status, d)
				}
			}
			if sr.Status != StepSucceeded {
				failed[sr.StepID] = true
				if sr.Status == StepFailed && !p.Steps[i].ContinueOnFailure && i != len(res.Steps)-1 {
					t.Fatalf("plan %d: got results past the failed step %s", n, sr.StepID)
				}
			}
		}
		if len(res.Steps) < len(p.Steps) && res.Status != "failed" {
			t.Fatalf("plan %d: got %d of %d steps with status %s", n, len(res.Steps), len(p.Steps), res.Status)
		}
	}
}

func TestRetryBackoff(t *testing.T) {
	r := &Retry{MaxAttempts: 5, InitialBackoffMS: 10, MaxBackoffMS: 50}
	var got []time.Duration
	for n := 1; n <= 4; n++ {
		got = append(got, r.Backoff(n))
	}
	want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestRunningExecutionNotResumed holds one Run inside its second step, its first step
// recorded, while a second Run of the plan starts: in the ledger the first execution
// looks interrupted, but the second Run must start execution 2, not resume it.
func TestRunningExecutionNotResumed(t *testing.T) {
	e := newEnv(t, envOpts{})
	entered, release := make(chan struct{}), make(chan struct{})
	held := true
	if err := e.reg.Register(&hostfuncs.Tool{Namespace: "test", Method: "hold", ReadOnly: hostfuncs.ReadOnlyAlways,
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			e.mu.Lock()
			first := held
			held = false
			e.mu.Unlock()
			if first {
				close(entered)
				<-release
			}
			return json.RawMessage(`{}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	p := mustPlan(t, `{'plan_id':'held','intent':'x','steps':[
	 {'step_id':'a','tool':'run_command','arguments':{'program':'echo','args':['a']}},
	 {'step_id':'b','tool':'test.hold','arguments':{}}]}`)
	first := make(chan *Result, 1)
	go func() {
		res, err := e.executor(Options{Events: io.Discard}).Run(context.Background(), p, approved(p))
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	<-entered
	second, err := e.executor(Options{Events: io.Discard}).Run(context.Background(), p, approved(p))
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if second.Number != 2 || second.Resumed {
		t.Errorf("the second Run took execution %d (resumed %v), want a new execution 2", second.Number, second.Resumed)
	}
	if res := <-first; res == nil || res.Number != 1 || res.Status != "completed" {
		t.Errorf("the first Run: got %+v, want execution 1 completed", res)
	}
}

// TestConcurrentRunsGetOwnNumbers starts one plan from several executors at once on
// one ledger: every execution gets its own number and no record id is written twice.
func TestConcurrentRunsGetOwnNumbers(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := mustPlan(t, `{'plan_id':'dup','intent':'x','steps':[
	 {'step_id':'a','tool':'run_command','arguments':{'program':'echo','args':['a']}},
	 {'step_id':'b','tool':'run_command','arguments':{'program':'echo','args':['b']}}]}`)
	const racers = 4
	ids := make([]string, racers)
	var wg sync.WaitGroup
	for i := range racers {
		x := e.executor(Options{Events: io.Discard})
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := x.Run(context.Background(), p, approved(p))
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = res.ExecutionID
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("execution %s ran twice (ids %v)", id, ids)
		}
		seen[id] = true
	}
	recs := e.records("dup")
	if len(recs) != 2*racers {
		t.Errorf("got %d records, want %d", len(recs), 2*racers)
	}
	byID := map[string]int{}
	for _, r := range recs {
		if byID[r.ExecutionID]++; byID[r.ExecutionID] > 1 {
			t.Errorf("record %s written twice", r.ExecutionID)
		}
	}
}
