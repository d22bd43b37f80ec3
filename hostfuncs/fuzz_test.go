package hostfuncs

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/scripthost/scripthost"
)

// fuzzSchemas are tool input schemas of the shapes tools declare.
var fuzzSchemas = []string{
	`{"type":"object","required":["to"],"properties":{"to":{"type":"string","format":"email"},"n":{"type":"integer","minimum":0}},"additionalProperties":false}`,
	`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z]+$"}}},"maxItems":3}}}`,
	`{"oneOf":[{"type":"string","maxLength":4},{"type":"number","multipleOf":0.5}]}`,
}

// FuzzValidateJSON validates arbitrary input against tool schemas: never a panic, an
// error for input that is not JSON, and the same verdict for the input and its
// canonical form (validation does not depend on formatting or key order).
func FuzzValidateJSON(f *testing.F) {
	f.Add(uint8(0), []byte(`{"to":"a@b.c","n":1}`))
	f.Add(uint8(0), []byte(`{"to":1,"extra":true}`))
	f.Add(uint8(1), []byte(`{"items":[{"id":"ab"},{"id":"AB"}]}`))
	f.Add(uint8(2), []byte(`1.5e0`))
	f.Fuzz(func(t *testing.T, which uint8, doc []byte) {
		schema := []byte(fuzzSchemas[int(which)%len(fuzzSchemas)])
		problems, err := ValidateJSON(schema, doc)
		canon, cerr := scripthost.CanonicalJSON(doc)
		if cerr != nil || len(bytes.TrimSpace(doc)) == 0 {
			// (CanonicalJSON takes an empty document as null; a tool input is never empty.)
			return
		}
		if err != nil {
			t.Fatalf("valid JSON %s: got error %v", doc, err)
		}
		again, err := ValidateJSON(schema, canon)
		if err != nil {
			t.Fatalf("canonical form %s: %v", canon, err)
		}
		if (len(problems) == 0) != (len(again) == 0) || len(problems) > 0 && !reflect.DeepEqual(problems, again) {
			t.Fatalf("%s: got %q, canonical form %s: %q", doc, problems, canon, again)
		}
	})
}
