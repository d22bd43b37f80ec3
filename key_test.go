package scripthost

import "testing"

func TestCanonicalJSONRefusesTrailingData(t *testing.T) {
	for _, in := range []string{`true}`, `{"a":1}]`, `1 2`, `{"a":1}{}`, `"x"]`} {
		if out, err := CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("%s: got %s, want an error for the data after the value", in, out)
		}
	}
	for in, want := range map[string]string{` {"b":1, "a":2} `: `{"a":2,"b":1}`, "[1]\n": `[1]`, ``: `null`} {
		if out, err := CanonicalJSON([]byte(in)); err != nil || string(out) != want {
			t.Errorf("%q: got %s, %v; want %s", in, out, err, want)
		}
	}
}
