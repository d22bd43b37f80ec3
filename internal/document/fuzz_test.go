package document

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzJSON: a document this package accepts means the same to encoding/json, which
// then reads it without a key it drops or merges: the strict reading is a subset of
// the lenient one, never a different value. A refusal is an *Error.
func FuzzJSON(f *testing.F) {
	f.Add([]byte(`{"steps":[{"tool":"a"}],"Steps":[]}`))
	f.Add([]byte(`{"a":1,"\u0061":2}`))
	f.Add([]byte(`{"a":"\ud83d\ude00","b":[1.50,-0,1e400]}`))
	f.Add([]byte(`{"a":{}} {}`))
	f.Add([]byte("{\"a\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict any
		if err := JSON("f.json", data, &strict); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("got %T %v, want *Error", err, err)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var lenient any
		if err := dec.Decode(&lenient); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", data, err)
		}
		if !reflect.DeepEqual(strict, lenient) {
			t.Fatalf("%q: got %#v, encoding/json reads %#v", data, strict, lenient)
		}
	})
}

// FuzzYAML: a YAML document this package accepts is the value yaml.v3 reads, as JSON.
func FuzzYAML(f *testing.F) {
	f.Add([]byte("a: 1\nA: 2\n"))
	f.Add([]byte("a: 1\na: 2\n"))
	f.Add([]byte("a: &x {b: 1}\nc: *x\n<<: *x\n"))
	f.Add([]byte("a: 1\n---\nb: 2\n"))
	f.Add([]byte("t: 2026-01-02\nn: ~\nf: 1.5\ns: 'x'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict any
		if err := YAML("f.yaml", data, &strict); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("got %T %v, want *Error", err, err)
			}
			return
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			t.Fatalf("accepted %q, which yaml.v3 refuses: %v", data, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q, which has no JSON form: %v", data, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var lenient any
		if err := dec.Decode(&lenient); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(strict, lenient) {
			t.Fatalf("%q: got %#v, yaml.v3 reads %#v", data, strict, lenient)
		}
	})
}
