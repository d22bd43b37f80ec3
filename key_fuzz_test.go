package scripthost

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzCanonicalJSON checks canonical JSON and the idempotency key: the canonical form
// is valid JSON with the same value, canonicalizing it again changes nothing, the same
// logical input (any formatting, any key order) gives the same key, and different
// inputs give different keys, including when a boundary between fields moves.
func FuzzCanonicalJSON(f *testing.F) {
	f.Add([]byte(`{"b":1,"a":[true,null,"x"]}`), []byte(` { "a" : [true, null, "x"], "b" : 1 } `), "wf", "h")
	f.Add([]byte(`{"amount":100}`), []byte(`{"amount":100.0}`), "pay", "charge")
	f.Add([]byte(`"\u00e9"`), []byte(`"é"`), "a", "bc")
	f.Fuzz(func(t *testing.T, a, b []byte, workflow, handler string) {
		ca, err := CanonicalJSON(a)
		if err != nil {
			return
		}
		if !json.Valid(ca) {
			t.Fatalf("canonical form %q is not JSON", ca)
		}
		if again, err := CanonicalJSON(ca); err != nil || !bytes.Equal(again, ca) {
			t.Fatalf("canonical form of %q changed again: %q (%v)", ca, again, err)
		}
		var va, vca any
		if err := decodeNumbers(a, &va); err == nil {
			if err := decodeNumbers(ca, &vca); err != nil || !reflect.DeepEqual(va, vca) {
				t.Fatalf("%q and its canonical form %q differ in value", a, ca)
			}
		}
		key := func(params []byte, wf, h string) string {
			return IdempotencyKey(InputHash(KeyInput{Workflow: wf, Handler: h, Namespace: "T", Method: "m", Params: params, Scope: "run"}), 0)
		}
		ka := key(ca, workflow, handler)
		if key(ca, workflow, handler) != ka {
			t.Fatal("the same input gave two keys")
		}
		if cb, err := CanonicalJSON(b); err == nil {
			if (key(cb, workflow, handler) == ka) != bytes.Equal(ca, cb) {
				t.Fatalf("inputs %q and %q: equal keys %v, equal canonical forms %v", a, b, key(cb, workflow, handler) == ka, bytes.Equal(ca, cb))
			}
		}
		if len(handler) > 0 && key(ca, workflow+handler[:1], handler[1:]) == ka {
			t.Fatalf("moving a byte from handler %q to workflow %q kept the key", handler, workflow)
		}
		if IdempotencyKey(InputHash(KeyInput{Workflow: workflow, Handler: handler, Namespace: "T", Method: "m", Params: ca, Scope: "run"}), 1) == ka {
			t.Fatal("a known failure did not change the key")
		}
	})
}

func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
