package plan

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
)

// The two step lists of the attack: an approval of one must never run the other.
const (
	benign = `[{"step_id":"a","tool":"file_read","arguments":{"path":"notes.txt"}}]`
	evil   = `[{"step_id":"a","tool":"file_write","arguments":{"path":"notes.txt","content":"gone"}}]`
)

// planDoc is a plan whose body is the given members.
func planDoc(members string) string {
	return `{"plan_id":"p1","intent":"x",` + members + `}`
}

func TestParseRefusesWhatTheHashDoesNotPinDown(t *testing.T) {
	step := func(members string) string {
		return planDoc(`"steps":[{"step_id":"a",` + members + `}]`)
	}
	tests := []struct {
		name, doc string
		want      string // the message after "plan: E001: "
	}{
		{"case variant before the key", planDoc(`"Steps":` + evil + `,"steps":` + benign),
			`line 1, column 30: unknown field "Steps" (did you mean "steps"?)`},
		{"case variant after the key", planDoc(`"steps":` + benign + `,"Steps":` + evil),
			`line 1, column 108: unknown field "Steps" (did you mean "steps"?)`},
		{"key twice", planDoc(`"steps":` + evil + `,"steps":` + benign),
			`line 1, column 126: duplicate key "steps" (first at line 1, column 30)`},
		{"capitals", planDoc(`"STEPS":` + benign), `line 1, column 30: unknown field "STEPS" (did you mean "steps"?)`},
		{"mixed case", planDoc(`"sTeps":` + benign), `line 1, column 30: unknown field "sTeps" (did you mean "steps"?)`},
		{"escaped key twice", planDoc(`"steps":` + benign + `,"\u0073teps":` + evil),
			`line 1, column 108: duplicate key "steps" (first at line 1, column 30)`},
		{"escaped case variant", planDoc(`"steps":` + benign + `,"\u0053teps":` + evil),
			`line 1, column 108: unknown field "Steps" (did you mean "steps"?)`},
		{"tool twice in a step", step(`"tool":"file_write","tool":"file_read","arguments":{"path":"x"}`),
			`line 1, column 74: duplicate key "tool" (first at line 1, column 54) at /steps/0`},
		{"arguments twice in a step", step(`"tool":"file_read","arguments":{"path":"x"},"arguments":{"path":"y"}`),
			`line 1, column 98: duplicate key "arguments" (first at line 1, column 73) at /steps/0`},
		{"argument twice", step(`"tool":"file_read","arguments":{"path":"x","path":"y"}`),
			`line 1, column 97: duplicate key "path" (first at line 1, column 86) at /steps/0/arguments`},
		{"case variant in a step", step(`"tool":"file_read","Tool":"file_write"`),
			`line 1, column 73: unknown field "Tool" (did you mean "tool"?) at /steps/0`},
		{"unknown field at the top", planDoc(`"steps":` + benign + `,"approved":true`),
			`line 1, column 108: unknown field "approved"`},
		{"unknown field in a precondition", step(`"tool":"file_read","precondition":{"file_exists":"x","or":{}}`),
			`line 1, column 107: unknown field "or" at /steps/0/precondition`},
		{"unknown field in a retry", step(`"tool":"file_read","retry":{"max_attempts":2,"Max_Attempts":9}`),
			`line 1, column 99: unknown field "Max_Attempts" (did you mean "max_attempts"?) at /steps/0/retry`},
		{"trailing garbage", planDoc(`"steps":`+benign) + ` x`, `line 1, column 109: data after the JSON document`},
		{"a second document", planDoc(`"steps":`+benign) + "\n" + planDoc(`"steps":`+evil), `line 2, column 1: data after the JSON document`},
		{"NUL in an argument's key", step(`"tool":"file_read","arguments":{"path":"x","path\u0000":"y"}`),
			`line 1, column 97: key "path\x00" holds NUL at /steps/0/arguments`},
		{"lone surrogate in an argument", step(`"tool":"file_read","arguments":{"path":"\ud800"}`),
			`line 1, column 93: lone UTF-16 surrogate \ud800 at /steps/0/arguments/path`},
		{"invalid UTF-8 in an argument", step("\"tool\":\"file_read\",\"arguments\":{\"path\":\"\xff\"}"),
			`line 1, column 94: invalid UTF-8`},
		{"wrong type", step(`"tool":"file_read","timeout_ms":"5"`),
			`line 1, column 86: cannot decode string into int64 at /steps/0/timeout_ms`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("got plan %+v with hash %s, want a refusal", p.Steps, p.Hash())
			}
			if got := CodeOf(err); got != CodeE001InvalidPlan {
				t.Errorf("got code %s, want %s", got, CodeE001InvalidPlan)
			}
			if got, want := err.Error(), "plan: E001: "+tt.want; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestParseFileNamesTheFile(t *testing.T) {
	_, err := ParseFile("plans/p.json", []byte("{\"plan_id\":\"p1\",\n  \"Steps\":[]}"))
	if got, want := err.Error(), `plan: E001: plans/p.json:2:3: unknown field "Steps" (did you mean "steps"?)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	_, err = ParseAuthorizationFile("p.auth.json", []byte(`{"status":"denied","status":"approved"}`))
	if got, want := err.Error(), `plan: E002: authorization: p.auth.json:1:20: duplicate key "status" (first at line 1, column 2)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Whatever spelling a document takes, the plan that runs is the one the hash covers:
// two documents are one plan under one hash, or two hashes.
func TestOneHashOnePlan(t *testing.T) {
	pairs := []struct{ name, a, b string }{
		{"case variant first or last", planDoc(`"Steps":` + evil + `,"steps":` + benign), planDoc(`"steps":` + benign + `,"Steps":` + evil)},
		{"tool in two cases", planDoc(`"steps":[{"step_id":"a","Tool":"file_write","tool":"file_read"}]`),
			planDoc(`"steps":[{"step_id":"a","tool":"file_read","Tool":"file_write"}]`)},
		{"argument twice", planDoc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"a","path":"b"}}]`),
			planDoc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"b"}}]`)},
		{"invalid UTF-8", planDoc("\"steps\":[{\"step_id\":\"a\",\"tool\":\"file_read\",\"arguments\":{\"path\":\"\xff\"}}]"),
			planDoc("\"steps\":[{\"step_id\":\"a\",\"tool\":\"file_read\",\"arguments\":{\"path\":\"\xfe\"}}]")},
		{"lone surrogates", planDoc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"\ud800"}}]`),
			planDoc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"\udbff"}}]`)},
		{"the same plan spelled two ways", planDoc(`"steps":` + benign),
			"{ \"steps\" : [ {\"arguments\":{\"path\":\"notes.txt\"},\"tool\":\"file\\u005fread\",\"step_id\":\"a\"} ],\n\"intent\":\"x\",\"plan_id\":\"p1\"}"},
	}
	for _, tt := range pairs {
		t.Run(tt.name, func(t *testing.T) {
			sameHashSamePlan(t, []byte(tt.a), []byte(tt.b))
		})
	}
}

// sameHashSamePlan fails when a and b parse to one hash but to different plans.
func sameHashSamePlan(t *testing.T, a, b []byte) {
	t.Helper()
	pa, errA := Parse(a)
	pb, errB := Parse(b)
	if errA != nil || errB != nil || pa.Hash() != pb.Hash() {
		return
	}
	if !reflect.DeepEqual(pa, pb) {
		t.Fatalf("one hash %s, two plans:\n%+v\n%+v", pa.Hash(), pa.Steps, pb.Steps)
	}
}

// The plan is decoded from the canonical form the hash is taken over, so its
// arguments are those bytes too.
func TestPlanIsDecodedFromTheHashedBytes(t *testing.T) {
	p, err := Parse([]byte(planDoc(`"steps":[{"step_id":"a","tool":"file_write","arguments":{ "path":"x", "content":"<b>" }}]`)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(p.Steps[0].Arguments), `{"content":"\u003cb\u003e","path":"x"}`; got != want {
		t.Errorf("got arguments %s, want %s", got, want)
	}
}

// The attack end to end: a person approves the document that reads as the benign
// plan; the document with the same keys in the other order must not run under that
// approval.
func TestApprovalDoesNotRunTheOtherPlan(t *testing.T) {
	const (
		ok   = `[{"step_id":"a","tool":"file_write","arguments":{"path":"ok.txt","content":"ok"}}]`
		evil = `[{"step_id":"a","tool":"file_write","arguments":{"path":"evil.txt","content":"x"}}]`
	)
	e := newEnv(t, envOpts{})
	shown, err1 := Parse([]byte(planDoc(`"Steps":` + evil + `,"steps":` + ok)))
	other, err2 := Parse([]byte(planDoc(`"steps":` + ok + `,"Steps":` + evil)))
	if err1 == nil && err2 == nil {
		auth := Approve(shown, "alice", time.Unix(0, 0))
		_, err := e.executor(Options{}).Run(context.Background(), other, &auth)
		if e.exists("evil.txt") {
			t.Fatalf("the approval of %s ran %s (%v)", shown.Steps[0].Arguments, other.Steps[0].Arguments, err)
		}
	}
	p, err := Parse([]byte(planDoc(`"steps":` + ok)))
	if err != nil {
		t.Fatal(err)
	}
	auth := Approve(p, "alice", time.Unix(0, 0))
	if _, err := e.executor(Options{}).Run(context.Background(), p, &auth); err != nil {
		t.Fatal(err)
	}
	if !e.exists("ok.txt") || e.exists("evil.txt") {
		t.Errorf("got ok.txt %v, evil.txt %v, want only ok.txt", e.exists("ok.txt"), e.exists("evil.txt"))
	}
}

// A plan changed in code after it was parsed is no longer the approved document.
func TestChangedPlanLosesItsApproval(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Plan)
	}{
		{"arguments replaced", func(p *Plan) { p.Steps[0].Arguments = []byte(`{"path":"evil.txt","content":"x"}`) }},
		{"arguments changed in place", func(p *Plan) { p.Steps[0].Arguments[bytes.IndexByte(p.Steps[0].Arguments, 'o')] = 'e' }},
		{"tool", func(p *Plan) { p.Steps[0].Tool = "run_command" }},
		{"step added", func(p *Plan) { p.Steps = append(p.Steps, Step{StepID: "b", Tool: "file_read"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(planDoc(`"steps":[{"step_id":"a","tool":"file_write","arguments":{"path":"ok.txt","content":"ok"}}]`)))
			if err != nil {
				t.Fatal(err)
			}
			auth := Approve(p, "alice", time.Unix(0, 0))
			if err := Authorize(p, &auth); err != nil {
				t.Fatalf("the approved plan: %v", err)
			}
			tt.change(p)
			if got := CodeOf(Authorize(p, &auth)); got != CodeE003HashMismatch {
				t.Errorf("got %q, want %s", got, CodeE003HashMismatch)
			}
		})
	}
}

func TestParseAuthorizationRefusals(t *testing.T) {
	const hash = `"plan_hash":"sha256:00"`
	tests := []struct {
		name, doc, want string
	}{
		{"status twice", `{"plan_id":"p1","status":"denied",` + hash + `,"status":"approved"}`,
			`line 1, column 59: duplicate key "status" (first at line 1, column 17)`},
		{"status in two cases", `{"plan_id":"p1","Status":"approved","status":"denied",` + hash + `}`,
			`line 1, column 17: unknown field "Status" (did you mean "status"?)`},
		{"hash twice, escaped", `{"plan_id":"p1","status":"approved",` + hash + `,"plan\u005fhash":"sha256:11"}`,
			`line 1, column 61: duplicate key "plan_hash" (first at line 1, column 37)`},
		{"plan id in capitals", `{"PLAN_ID":"p1","status":"approved",` + hash + `}`,
			`line 1, column 2: unknown field "PLAN_ID" (did you mean "plan_id"?)`},
		{"unknown field", `{"plan_id":"p1","status":"approved",` + hash + `,"scope":"all"}`,
			`line 1, column 61: unknown field "scope"`},
		{"trailing data", `{"plan_id":"p1","status":"approved",` + hash + `}{}`,
			`line 1, column 61: data after the JSON document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAuthorization([]byte(tt.doc))
			if err == nil {
				t.Fatalf("got %+v, want a refusal", a)
			}
			if got, want := err.Error(), "plan: E002: authorization: "+tt.want; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// The plans in the repository still parse, to the hash they had: the canonical form
// of the document.
func TestExamplePlansParse(t *testing.T) {
	files, err := filepath.Glob("../scripts/plans/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("got plans %v (%v), want the examples", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseFile(f, raw)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		canon, err := scripthost.CanonicalJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p.Hash(), hashOf(canon); got != want {
			t.Errorf("%s: got hash %s, want %s", f, got, want)
		}
	}
}
