package hostfuncs

import (
	"strings"
	"testing"
)

// TestValidateHugeNumbers: a number whose decimal exponent is far beyond any a tool
// means (1e1000001 made the schema validator panic; 1e999999 made it compute with a
// number of millions of bits) is a problem at its pointer, whatever the schema checks,
// and numbers within the bound validate as before.
func TestValidateHugeNumbers(t *testing.T) {
	const schema = `{"type":"object","properties":{"n":{"type":"number","minimum":0,"multipleOf":0.5},
		"list":{"type":"array","items":{"type":"number","maximum":1e400}}}}`
	for _, tc := range []struct {
		doc  string
		want string
	}{
		{`{"n":1e1000001}`, "/n: number 1e1000001 is out of range (its decimal exponent is beyond ±10000)"},
		{`{"n":1E999999}`, "/n: number 1E999999 is out of range"},
		{`{"n":-2.5e-10001}`, "/n: number -2.5e-10001 is out of range"},
		{`{"list":[1,2,1e99999999999999999999999]}`, "/list/2: number 1e99999999999999999999999 is out of range"},
		{`{"n":0.` + strings.Repeat("0", 10001) + `1}`, "/n: number 0.00000000000000000000000000000000000000 is out of range"},
		{`{"n":1e10000}`, ""},
		{`{"n":2.5,"list":[1e300,-7]}`, ""},
		{`{"n":0.3}`, "/n: multipleOf: got 0.3, want 0.5"},
	} {
		problems, err := ValidateJSON([]byte(schema), []byte(tc.doc))
		if err != nil {
			t.Errorf("%.40s: %v", tc.doc, err)
			continue
		}
		got := strings.Join(problems, "; ")
		if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%.40s: got %q, want %q", tc.doc, got, tc.want)
		}
	}
}
