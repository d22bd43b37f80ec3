package plan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
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

// FuzzApprovalHash: an approval hash pins down one plan. Two documents that parse to
// one hash parse to equal plans; a document that parses is the same plan under the
// same hash as its canonical form (the bytes hashed); and the plan's own encoding
// parses back to a plan with the same encoding, hashed as the plan built in code is.
func FuzzApprovalHash(f *testing.F) {
	const (
		benign = `[{"step_id":"a","tool":"file_read","arguments":{"path":"notes.txt"}}]`
		evil   = `[{"step_id":"a","tool":"file_write","arguments":{"path":"notes.txt","content":"gone"}}]`
	)
	doc := func(members string) []byte { return []byte(`{"plan_id":"p","intent":"x",` + members + `}`) }
	f.Add(doc(`"Steps":`+evil+`,"steps":`+benign), doc(`"steps":`+benign+`,"Steps":`+evil))
	f.Add(doc(`"steps":`+evil+`,"STEPS":`+benign), doc(`"STEPS":`+benign+`,"steps":`+evil))
	f.Add(doc(`"steps":`+benign+`,"\u0073teps":`+evil), doc(`"\u0073teps":`+evil+`,"steps":`+benign))
	f.Add(doc(`"steps":[{"step_id":"a","tool":"file_write","Tool":"file_read"}]`), doc(`"steps":[{"step_id":"a","Tool":"file_read","tool":"file_write"}]`))
	f.Add(doc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"a","path":"b"}}]`), doc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"b"}}]`))
	f.Add(doc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"\ud800"}}]`), doc(`"steps":[{"step_id":"a","tool":"file_read","arguments":{"path":"\udfff"}}]`))
	f.Add(doc("\"steps\":[{\"step_id\":\"a\",\"tool\":\"file_read\",\"arguments\":{\"path\":\"\xff\"}}]"), doc("\"steps\":[{\"step_id\":\"a\",\"tool\":\"file_read\",\"arguments\":{\"path\":\"\xfe\"}}]"))
	f.Add(doc(`"steps":`+benign), []byte(` {"steps":[{"arguments":{"path":"notes.txt"},"step_id":"a","tool":"file\u005fread"}],"plan_id":"p","intent":"x"} `))
	f.Add(doc(`"steps":[{"step_id":"a","tool":"t","retry":{"max_attempts":2,"multiplier":2.0}}]`), doc(`"steps":[{"step_id":"a","tool":"t","retry":{"max_attempts":2,"multiplier":2}}]`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pa, errA := Parse(a)
		pb, errB := Parse(b)
		if errA == nil && errB == nil && pa.Hash() == pb.Hash() && !reflect.DeepEqual(pa, pb) {
			t.Fatalf("one hash %s, two plans:\n%s\n%s", pa.Hash(), a, b)
		}
		if errA != nil {
			return
		}
		canon, err := scripthost.CanonicalJSON(a)
		if err != nil {
			t.Fatalf("a plan whose document has no canonical form: %v", err)
		}
		pc, err := Parse(canon)
		if err != nil {
			t.Fatalf("the canonical form %s of a plan: %v", canon, err)
		}
		if pc.Hash() != pa.Hash() || !reflect.DeepEqual(pc, pa) {
			t.Fatalf("the canonical form %s: got hash %s, plan %+v; want %s, %+v", canon, pc.Hash(), pc, pa.Hash(), pa)
		}
		enc, err := json.Marshal(pa)
		if err != nil {
			t.Fatal(err)
		}
		pe, err := Parse(enc)
		if err != nil {
			t.Fatalf("the plan's encoding %s: %v", enc, err)
		}
		again, err := json.Marshal(pe)
		if err != nil {
			t.Fatal(err)
		}
		built := *pa
		built.hash = ""
		if !bytes.Equal(again, enc) || pe.Hash() != built.Hash() {
			t.Fatalf("the plan's encoding %s: got %s, hash %s; want the same, hash %s", enc, again, pe.Hash(), built.Hash())
		}
	})
}
