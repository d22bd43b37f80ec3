package plan

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzParse: a plan document is a plan or an invalid-plan error, never a panic; a plan
// that parses hashes the same way every time, an approval of it authorizes it, and
// the approval survives its own JSON.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"plan_id":"tidy","intent":"x","steps":[{"step_id":"a","tool":"file_write","arguments":{"path":"a.txt","content":"a"}}]}`))
	f.Add([]byte(`{"plan_id":"p","intent":"x","steps":[{"step_id":"a","tool":"run_command","arguments":{"program":"echo","args":["b"]},"depends_on":["z"]}]}`))
	f.Add([]byte(`{"plan_id":"p","intent":"x","steps":[]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := Parse(raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("got an empty error message")
			}
			return
		}
		again, err := Parse(raw)
		if err != nil || again.Hash() != p.Hash() {
			t.Fatalf("second parse: got %v, hash %s, want hash %s", err, again.Hash(), p.Hash())
		}
		a := Approve(p, "fuzz", time.Unix(0, 0))
		if err := Authorize(p, &a); err != nil {
			t.Fatalf("approval of the plan: %v", err)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseAuthorization(b)
		if err != nil {
			t.Fatalf("authorization %s: %v", b, err)
		}
		if err := Authorize(again, &back); err != nil {
			t.Fatalf("approval read back: %v", err)
		}
	})
}

// FuzzParseAuthorization: any authorization document is a record or an error, and a
// record that is not an approval of the plan never authorizes it.
func FuzzParseAuthorization(f *testing.F) {
	p, err := Parse([]byte(`{"plan_id":"tidy","intent":"x","steps":[{"step_id":"a","tool":"file_write","arguments":{"path":"a.txt","content":"a"}}]}`))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := json.Marshal(Approve(p, "alice", time.Unix(0, 0)))
	f.Add(good)
	f.Add([]byte(`{"plan_id":"tidy","status":"rejected","plan_hash":"` + p.Hash() + `"}`))
	f.Add([]byte(`{"plan_id":"tidy","status":"approved","plan_hash":"sha256:00"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseAuthorization(raw)
		if err != nil {
			return
		}
		ok := Authorize(p, &a) == nil
		want := a.Status == StatusApproved && a.PlanID == p.PlanID && a.PlanHash == p.Hash()
		if ok != want {
			t.Fatalf("authorization %s: got authorized %v, want %v", raw, ok, want)
		}
	})
}
