package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const writePlan = `{'plan_id':'p1','intent':'write a file','steps':[
 {'step_id':'w','tool':'file_write','arguments':{'path':'out.txt','content':'hi'}}]}`

func TestRefusals(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		auth func(p *Plan) *Authorization
		want string
	}{
		{"not json", `{`, nil, CodeE001InvalidPlan},
		{"no steps", `{'plan_id':'p1','intent':'x','steps':[]}`, nil, CodeE001InvalidPlan},
		{"bad plan id", `{'plan_id':'a/b','intent':'x','steps':[{'step_id':'s','tool':'file_read','arguments':{'path':'a'}}]}`, nil, CodeE001InvalidPlan},
		{"unknown field", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'s','tool':'file_read','args':{}}]}`, nil, CodeE001InvalidPlan},
		{"duplicate step", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'s','tool':'file_read'},{'step_id':'s','tool':'file_read'}]}`, nil, CodeE001InvalidPlan},
		{"forward dependency", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'file_read','depends_on':['b']},{'step_id':'b','tool':'file_read'}]}`, nil, CodeE001InvalidPlan},
		{"arguments not object", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'file_read','arguments':[1]}]}`, nil, CodeE001InvalidPlan},
		{"bad retry", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'file_read','retry':{'max_attempts':0}}]}`, nil, CodeE001InvalidPlan},
		{"no authorization", writePlan, func(*Plan) *Authorization { return nil }, CodeE002NotApproved},
		{"pending", writePlan, func(p *Plan) *Authorization { a := approved(p); a.Status = StatusPending; return a }, CodeE002NotApproved},
		{"denied", writePlan, func(p *Plan) *Authorization { a := approved(p); a.Status = StatusDenied; return a }, CodeE002NotApproved},
		{"other plan id", writePlan, func(p *Plan) *Authorization { a := approved(p); a.PlanID = "p2"; return a }, CodeE003HashMismatch},
		{"other hash", writePlan, func(p *Plan) *Authorization { a := approved(p); a.PlanHash = "sha256:00"; return a }, CodeE003HashMismatch},
		{"unknown tool", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'rm_rf','arguments':{}}]}`, nil, CodeE201ToolNotRegistered},
		{"unknown namespaced tool", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'Shell.exec','arguments':{}}]}`, nil, CodeE201ToolNotRegistered},
		{"missing argument", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'file_write','arguments':{'path':'x'}}]}`, nil, CodeE202BadArguments},
		{"extra argument", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'file_read','arguments':{'path':'x','mode':'r'}}]}`, nil, CodeE202BadArguments},
		{"wrong type", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'a','tool':'run_command','arguments':{'program':'echo','args':'hi'}}]}`, nil, CodeE202BadArguments},
		// A refusal of a later step refuses the whole plan before the first step runs.
		{"later step refused", `{'plan_id':'p1','intent':'x','steps':[{'step_id':'w','tool':'file_write','arguments':{'path':'out.txt','content':'x'}},{'step_id':'b','tool':'nope'}]}`, nil, CodeE201ToolNotRegistered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			p, err := Parse([]byte(strings.ReplaceAll(tt.doc, "'", `"`)))
			if err == nil {
				auth := approved(p)
				if tt.auth != nil {
					auth = tt.auth(p)
				}
				var res *Result
				res, err = e.executor(Options{}).Run(context.Background(), p, auth)
				if res != nil {
					t.Errorf("got a result %+v, want none for a refusal", res)
				}
			}
			if got := CodeOf(err); got != tt.want {
				t.Fatalf("got %s (%v), want %s", got, err, tt.want)
			}
			var pe *Error
			if errors.As(err, &pe) && pe.ExitCode() != ExitGeneral {
				t.Errorf("got exit code %d, want %d", pe.ExitCode(), ExitGeneral)
			}
			if e.exists("out.txt") || len(e.records("p1")) != 0 {
				t.Error("got something executed, want nothing before a refusal")
			}
		})
	}
}

func TestPreconditions(t *testing.T) {
	tests := []struct {
		name string
		pc   string
		want string // "" for a precondition that holds
	}{
		{"file exists", `{'file_exists':'have.txt'}`, ""},
		{"file missing", `{'file_exists':'missing.txt'}`, CodeE101FileMissing},
		{"file is a dir", `{'file_exists':'dir'}`, CodeE101FileMissing},
		{"dir exists", `{'dir_exists':'dir'}`, ""},
		{"dir missing", `{'dir_exists':'nodir'}`, CodeE106DirMissing},
		{"path absent", `{'path_absent':'nothing'}`, ""},
		{"path present", `{'path_absent':'have.txt'}`, CodeE107PathExists},
		{"command available", `{'command_available':'echo'}`, ""},
		{"command not allowlisted", `{'command_available':'rm'}`, CodeE108CommandMissing},
		{"file matches", `{'file_matches':{'path':'have.txt','pattern':'^hello'}}`, ""},
		{"file does not match", `{'file_matches':{'path':'have.txt','pattern':'^bye'}}`, CodeE105NoMatch},
		{"all hold", `{'file_exists':'have.txt','dir_exists':'dir','command_available':'sh'}`, ""},
		{"path escapes", `{'file_exists':'../../etc/passwd'}`, CodeE302OutsideSandbox},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			if err := os.WriteFile(filepath.Join(e.dir, "have.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(e.dir, "dir"), 0o755); err != nil {
				t.Fatal(err)
			}
			p := mustPlan(t, `{'plan_id':'pc','intent':'x','steps':[
			 {'step_id':'a','tool':'file_write','arguments':{'path':'a.txt','content':'a'},'precondition':`+tt.pc+`},
			 {'step_id':'b','tool':'file_write','arguments':{'path':'b.txt','content':'b'}}]}`)
			res, err := e.run(p, Options{})
			if got := CodeOf(err); got != tt.want {
				t.Fatalf("got %q (%v), want %q", got, err, tt.want)
			}
			if tt.want == "" {
				if !e.exists("a.txt") || !e.exists("b.txt") {
					t.Error("got files missing, want both steps run")
				}
				return
			}
			if e.exists("a.txt") || e.exists("b.txt") {
				t.Error("got a tool called, want the plan stopped before the tool")
			}
			if got := stepIDs(res); got != "a:failed" {
				t.Errorf("got steps %s, want a:failed", got)
			}
			recs := e.records("pc/1")
			if len(recs) != 1 || recs[0].ErrorCode != tt.want || recs[0].Success {
				t.Errorf("got records %+v, want one failed record with %s", recs, tt.want)
			}
		})
	}
}

func TestConfirmation(t *testing.T) {
	doc := `{'plan_id':'conf','intent':'x','steps':[
	 {'step_id':'a','tool':'file_write','arguments':{'path':'a.txt','content':'a'}},
	 {'step_id':'b','tool':'file_write','arguments':{'path':'b.txt','content':'b'},'requires_confirmation':true},
	 {'step_id':'c','tool':'file_write','arguments':{'path':'c.txt','content':'c'}}]}`
	yes := func(context.Context, *Plan, Step) (bool, error) { return true, nil }
	no := func(context.Context, *Plan, Step) (bool, error) { return false, nil }
	broken := func(context.Context, *Plan, Step) (bool, error) { return true, errors.New("no terminal") }
	tests := []struct {
		name    string
		confirm ConfirmFunc
		want    string
		steps   string
	}{
		{"approved", yes, "", "a:succeeded,b:succeeded,c:succeeded"},
		{"denied", no, CodeE303ConfirmationDenied, "a:succeeded,b:failed"},
		{"no callback denies", nil, CodeE303ConfirmationDenied, "a:succeeded,b:failed"},
		{"callback error denies", broken, CodeE303ConfirmationDenied, "a:succeeded,b:failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			var asked []string
			var confirm ConfirmFunc
			if tt.confirm != nil {
				confirm = func(ctx context.Context, p *Plan, s Step) (bool, error) {
					asked = append(asked, s.StepID)
					return tt.confirm(ctx, p, s)
				}
			}
			res, err := e.run(mustPlan(t, doc), Options{Confirm: confirm})
			if got := CodeOf(err); got != tt.want {
				t.Fatalf("got %q (%v), want %q", got, err, tt.want)
			}
			if got := stepIDs(res); got != tt.steps {
				t.Errorf("got %s, want %s", got, tt.steps)
			}
			if tt.confirm != nil && strings.Join(asked, ",") != "b" {
				t.Errorf("got confirmation asked for %v, want only b", asked)
			}
			if tt.want != "" {
				if e.exists("b.txt") || e.exists("c.txt") {
					t.Error("got b or c written, want the plan stopped at the denial")
				}
				if code := err.(*Error).ExitCode(); code != ExitConfirmationDenied {
					t.Errorf("got exit %d, want %d", code, ExitConfirmationDenied)
				}
			}
		})
	}
}

func TestStopAtFirstFailure(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := mustPlan(t, `{'plan_id':'stop','intent':'x','steps':[
	 {'step_id':'a','tool':'file_write','arguments':{'path':'a.txt','content':'a'}},
	 {'step_id':'b','tool':'run_command','arguments':{'program':'false','args':[]}},
	 {'step_id':'c','tool':'file_write','arguments':{'path':'c.txt','content':'c'}},
	 {'step_id':'d','tool':'test.flaky','arguments':{}}]}`)
	res, err := e.run(p, Options{})
	if CodeOf(err) != CodeE301StepFailed || err.(*Error).ExitCode() != ExitStepFailed {
		t.Fatalf("got %v, want %s with exit 30", err, CodeE301StepFailed)
	}
	if got := stepIDs(res); got != "a:succeeded,b:failed" {
		t.Errorf("got %s, want the results to end at the failed step", got)
	}
	if e.exists("c.txt") || e.calls["flaky"] != 0 {
		t.Error("got a later step executed, want none")
	}
	if recs := e.records("stop/1"); len(recs) != 2 || recs[1].ExitCode != 1 {
		t.Errorf("got %d records (%+v), want 2 with the command's exit code 1", len(recs), recs)
	}
}

func TestDependencyBlocking(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := mustPlan(t, `{'plan_id':'deps','intent':'x','steps':[
	 {'step_id':'a','tool':'test.fail','arguments':{},'continue_on_failure':true},
	 {'step_id':'b','tool':'file_write','arguments':{'path':'b.txt','content':'b'},'depends_on':['a']},
	 {'step_id':'c','tool':'file_write','arguments':{'path':'c.txt','content':'c'},'depends_on':['b']},
	 {'step_id':'d','tool':'file_write','arguments':{'path':'d.txt','content':'d'}}]}`)
	res, err := e.run(p, Options{})
	if CodeOf(err) != CodeE301StepFailed {
		t.Fatalf("got %v, want %s", err, CodeE301StepFailed)
	}
	if got, want := stepIDs(res), "a:failed,b:blocked,c:blocked,d:succeeded"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if e.exists("b.txt") || e.exists("c.txt") || !e.exists("d.txt") {
		t.Error("got dependents executed or the independent step skipped")
	}
	for _, r := range e.records("deps/1")[1:3] {
		if r.ErrorCode != CodeE305Blocked {
			t.Errorf("got %s for %s, want %s", r.ErrorCode, r.StepID, CodeE305Blocked)
		}
	}
}

func TestRetry(t *testing.T) {
	tests := []struct {
		name     string
		retry    string
		fails    int
		want     string
		attempts int
		sleeps   string
	}{
		{"no retry policy: no hidden retries", ``, 1, CodeE301StepFailed, 1, ""},
		{"succeeds on the third attempt", `,'retry':{'max_attempts':3,'initial_backoff_ms':100}`, 2, "", 3, "100ms,200ms"},
		{"runs out of attempts", `,'retry':{'max_attempts':2,'initial_backoff_ms':50,'multiplier':3}`, 5, CodeE301StepFailed, 2, "50ms"},
		{"backoff capped", `,'retry':{'max_attempts':4,'initial_backoff_ms':100,'max_backoff_ms':250}`, 3, "", 4, "100ms,200ms,250ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.flakyFails = tt.fails
			p := mustPlan(t, `{'plan_id':'retry','intent':'x','steps':[{'step_id':'f','tool':'test.flaky','arguments':{}`+tt.retry+`}]}`)
			res, err := e.run(p, Options{})
			if got := CodeOf(err); got != tt.want {
				t.Fatalf("got %q (%v), want %q", got, err, tt.want)
			}
			if res.Steps[0].Attempts != tt.attempts || e.calls["flaky"] != tt.attempts {
				t.Errorf("got %d attempts recorded, %d calls, want %d", res.Steps[0].Attempts, e.calls["flaky"], tt.attempts)
			}
			var sl []string
			for _, d := range e.sleeps {
				sl = append(sl, d.String())
			}
			if got := strings.Join(sl, ","); got != tt.sleeps {
				t.Errorf("got backoff %s, want %s", got, tt.sleeps)
			}
			// Each attempt is its own mutation with its own key.
			muts, err := e.store.Mutations(context.Background(), mutFilter("retry"))
			if err != nil {
				t.Fatal(err)
			}
			keys := map[string]bool{}
			for _, m := range muts {
				keys[m.IdempotencyKey] = true
			}
			if len(muts) != tt.attempts || len(keys) != tt.attempts {
				t.Errorf("got %d mutations with %d keys, want %d", len(muts), len(keys), tt.attempts)
			}
		})
	}
}

func TestStepTimeoutAndSandbox(t *testing.T) {
	tests := []struct {
		name string
		step string
		want string
		exit int
	}{
		{"command outlives its timeout", `{'step_id':'s','tool':'run_command','arguments':{'program':'sleep','args':['30'],'timeout_ms':200}}`, CodeE307StepTimeout, ExitStepTimeout},
		{"step timeout", `{'step_id':'s','tool':'run_command','arguments':{'program':'sleep','args':['30']},'timeout_ms':200}`, CodeE307StepTimeout, ExitStepTimeout},
		{"path traversal", `{'step_id':'s','tool':'file_read','arguments':{'path':'../../etc/passwd'}}`, CodeE302OutsideSandbox, ExitSandboxViolation},
		{"absolute path", `{'step_id':'s','tool':'file_write','arguments':{'path':'/tmp/planted','content':'x'}}`, CodeE302OutsideSandbox, ExitSandboxViolation},
		{"command outside the allowlist", `{'step_id':'s','tool':'run_command','arguments':{'program':'rm','args':['-rf','.']}}`, CodeE302OutsideSandbox, ExitSandboxViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			res, err := e.run(mustPlan(t, `{'plan_id':'t','intent':'x','steps':[`+tt.step+`]}`), Options{})
			if got := CodeOf(err); got != tt.want {
				t.Fatalf("got %q (%v), want %q", got, err, tt.want)
			}
			if got := err.(*Error).ExitCode(); got != tt.exit {
				t.Errorf("got exit %d, want %d", got, tt.exit)
			}
			if len(res.Steps) != 1 || res.Steps[0].Status != StepFailed {
				t.Errorf("got %s, want one failed step", stepIDs(res))
			}
		})
	}
}

func TestSecretsRedacted(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := mustPlan(t, `{'plan_id':'sec','intent':'x','steps':[
	 {'step_id':'s','tool':'test.secret','arguments':{'pin':'4242-pin-value','note':'token ghp_abcdefghijklmnopqrstuvwxyz0123 and marked-secret-value'}},
	 {'step_id':'c','tool':'run_command','arguments':{'program':'echo','args':['password=hunter22','marked-secret-value']}}]}`)
	x := e.executor(Options{Redactor: redactorWith("marked-secret-value")})
	if _, err := x.Run(context.Background(), p, approved(p)); err != nil {
		t.Fatal(err)
	}
	var stored strings.Builder
	for _, r := range e.records("sec") {
		stored.WriteString(string(r.Arguments) + r.Stdout + r.Stderr + string(r.Result) + r.Error + string(r.Diagnostics))
	}
	muts, err := e.store.Mutations(context.Background(), mutFilter("sec"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range muts {
		stored.WriteString(string(m.Params) + string(m.Result))
	}
	for name, text := range map[string]string{"ledger": stored.String(), "events": e.events.String()} {
		for _, secret := range []string{"4242-pin-value", "ghp_abcdefghijklmnopqrstuvwxyz0123", "hunter22", "marked-secret-value", "tool-held-secret-value"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s: got %q in the output, want it redacted", name, secret)
			}
		}
		if !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s: got no redaction marker, want some", name)
		}
	}
	if len(muts) != 1 {
		t.Errorf("got %d mutations, want 1 (echo is read-only)", len(muts))
	}
}

// A file_read of a file that does not exist fails its step with an error naming the
// path, records it as evidence, and runs nothing after it.
func TestFileReadOfMissingFile(t *testing.T) {
	e := newEnv(t, envOpts{})
	p := mustPlan(t, `{'plan_id':'missing','intent':'x','steps':[
	 {'step_id':'read','tool':'file_read','arguments':{'path':'notes/gone.txt'}},
	 {'step_id':'write','tool':'file_write','arguments':{'path':'after.txt','content':'x'}}]}`)
	res, err := e.run(p, Options{})
	if CodeOf(err) != CodeE301StepFailed || err.(*Error).ExitCode() != ExitStepFailed {
		t.Fatalf("got %v, want %s with exit 30", err, CodeE301StepFailed)
	}
	if !strings.Contains(err.Error(), "notes/gone.txt") {
		t.Errorf("error %q: want the missing path named", err)
	}
	if got := stepIDs(res); got != "read:failed" {
		t.Errorf("got %s, want the read failed and nothing after it", got)
	}
	if e.exists("after.txt") {
		t.Error("the step after the failed read ran")
	}
	recs := e.records("missing/1")
	if len(recs) != 1 || recs[0].Success || recs[0].ErrorCode != CodeE301StepFailed ||
		!strings.Contains(recs[0].Error, "notes/gone.txt: no such file or directory") {
		t.Errorf("evidence: got %+v, want one failed record naming the missing path", recs)
	}
}
