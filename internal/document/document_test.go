package document

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type step struct {
	ID    string          `json:"id"`
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input,omitempty"`
	Retry *struct {
		Max int `json:"max"`
	} `json:"retry,omitempty"`
}

type doc struct {
	Name    string            `json:"name"`
	Steps   []step            `json:"steps"`
	Headers map[string]string `json:"headers,omitempty"`
	At      time.Time         `json:"at,omitzero"`
	Extra   any               `json:"extra,omitempty"`
}

func TestJSONRefusals(t *testing.T) {
	tests := []struct {
		name, doc string
		want      string // the whole message, file and position included
	}{
		{"duplicate, case variant first", `{"Steps":[],"steps":[]}`, `d.json:1:2: unknown field "Steps" (did you mean "steps"?)`},
		{"duplicate, case variant last", `{"steps":[],"Steps":[]}`, `d.json:1:13: unknown field "Steps" (did you mean "steps"?)`},
		{"duplicate key", "{\"name\":\"a\",\n \"name\":\"b\"}", `d.json:2:2: duplicate key "name" (first at line 1, column 2)`},
		{"all capitals", `{"STEPS":[]}`, `d.json:1:2: unknown field "STEPS" (did you mean "steps"?)`},
		{"mixed case", `{"sTeps":[]}`, `d.json:1:2: unknown field "sTeps" (did you mean "steps"?)`},
		{"escaped duplicate", `{"steps":[],"\u0073teps":[]}`, `d.json:1:13: duplicate key "steps" (first at line 1, column 2)`},
		{"escaped case variant", `{"\u0053teps":[]}`, `d.json:1:2: unknown field "Steps" (did you mean "steps"?)`},
		{"duplicate in a step", `{"steps":[{"id":"a","tool":"x","tool":"y"}]}`, `d.json:1:32: duplicate key "tool" (first at line 1, column 21) at /steps/0`},
		{"duplicate input", `{"steps":[{"id":"a","input":{},"input":{"p":1}}]}`, `d.json:1:32: duplicate key "input" (first at line 1, column 21) at /steps/0`},
		{"duplicate inside input", `{"steps":[{"id":"a","input":{"p":1,"p":2}}]}`, `d.json:1:36: duplicate key "p" (first at line 1, column 30) at /steps/0/input`},
		{"duplicate inside any", `{"extra":[{"a":{"b":1,"b":1}}]}`, `d.json:1:23: duplicate key "b" (first at line 1, column 17) at /extra/0/a`},
		{"duplicate map key", `{"headers":{"X":"1","X":"2"}}`, `d.json:1:21: duplicate key "X" (first at line 1, column 13) at /headers`},
		{"unknown nested", `{"steps":[{"id":"a","retry":{"max":1,"min":0}}]}`, `d.json:1:38: unknown field "min" at /steps/0/retry`},
		{"unknown top level", `{"name":"a","colour":"red"}`, `d.json:1:13: unknown field "colour"`},
		{"snake case spelled another way", `{"steps":[{"ID":"a"}]}`, `d.json:1:12: unknown field "ID" (did you mean "id"?) at /steps/0`},
		{"trailing garbage", `{"name":"a"} x`, `d.json:1:14: data after the JSON document`},
		{"second document", "{\"name\":\"a\"}\n{\"name\":\"b\"}", `d.json:2:1: data after the JSON document`},
		{"stray close", `{"name":"a"}]`, `d.json:1:13: data after the JSON document`},
		{"NUL in a key", `{"extra":{"a\u0000":1}}`, `d.json:1:11: key "a\x00" holds NUL at /extra`},
		{"lone surrogate in a key", `{"extra":{"\ud800":1}}`, `d.json:1:11: key "\ud800": lone UTF-16 surrogate \ud800 at /extra`},
		{"lone surrogate in a value", `{"name":"a\udc00"}`, `d.json:1:9: lone UTF-16 surrogate \udc00 at /name`},
		{"invalid UTF-8", "{\"name\":\"a\xff\"}", `d.json:1:11: invalid UTF-8`},
		{"syntax", "{\n\"name\" \"a\"}", `d.json:2:8: invalid JSON: invalid character '"' after object key`},
		{"truncated", `{"name":`, `d.json:1:9: invalid JSON: unexpected EOF`},
		{"empty", " \n", `d.json: empty document`},
		{"wrong type", "{\"steps\":[\n {\"id\":7}]}", `d.json:2:8: cannot decode number into string at /steps/0/id`},
		{"wrong type of a struct", `{"steps":[{"retry":[1]}]}`, `d.json:1:20: cannot decode array into struct { Max int "json:\"max\"" } at /steps/0/retry`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			err := JSON("d.json", []byte(tt.doc), &d)
			if err == nil {
				t.Fatalf("got %+v, want error %s", d, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("got %s, want %s", err, tt.want)
			}
			var de *Error
			if !errors.As(err, &de) {
				t.Errorf("got %T, want *Error", err)
			}
		})
	}
}

func TestJSONDecodes(t *testing.T) {
	raw := `{"name":"n","steps":[{"id":"a","tool":"x","input":{"B":1,"b":2,"\ud83d\ude00":"\u00e9"}}],
	"headers":{"A":"1","a":"2"},"at":"2026-01-02T03:04:05Z","extra":{"n":1.50}}`
	var got doc
	if err := JSON("d.json", []byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	want := doc{Name: "n", Steps: []step{{ID: "a", Tool: "x", Input: json.RawMessage(`{"B":1,"b":2,"😀":"é"}`)}},
		Headers: map[string]string{"A": "1", "a": "2"}, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Extra: map[string]any{"n": json.Number("1.50")}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestNotAPointer(t *testing.T) {
	if err := JSON("d.json", []byte(`{}`), doc{}); err == nil {
		t.Error("got no error for a non-pointer, want one")
	}
}

func TestDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	var v any
	err := JSON("d.json", []byte(deep), &v)
	if err == nil || !strings.Contains(err.Error(), "nested deeper than") {
		t.Errorf("got %v, want a depth refusal", err)
	}
}

type embedded struct {
	Inner string `json:"inner"`
}

type outer struct {
	embedded
	Plain  int
	hidden int
	Skip   int `json:"-"`
}

func TestStructFields(t *testing.T) {
	tests := []struct {
		doc, want string
	}{
		{`{"inner":"a","Plain":1}`, ""},
		{`{"plain":1}`, `unknown field "plain" (did you mean "Plain"?)`},
		{`{"hidden":1}`, `unknown field "hidden"`},
		{`{"Skip":1}`, `unknown field "Skip"`},
		{`{"-":1}`, `unknown field "-"`},
		{`{"embedded":{}}`, `unknown field "embedded"`},
	}
	for _, tt := range tests {
		var o outer
		err := JSON("", []byte(tt.doc), &o)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !strings.HasSuffix(got, tt.want) || (tt.want == "") != (got == "") {
			t.Errorf("%s: got %q, want %q", tt.doc, got, tt.want)
		}
	}
}

func TestYAMLRefusals(t *testing.T) {
	tests := []struct {
		name, doc string
		want      string
	}{
		{"duplicate", "name: a\nname: b\n", `d.yaml:2:1: duplicate key "name" (first at line 1, column 1)`},
		{"duplicate quoted", "name: a\n\"name\": b\n", `d.yaml:2:1: duplicate key "name" (first at line 1, column 1)`},
		{"duplicate escaped", "name: a\n\"\\x6eame\": b\n", `d.yaml:2:1: duplicate key "name" (first at line 1, column 1)`},
		{"duplicate in a step", "steps:\n  - id: a\n    tool: x\n    tool: y\n", `d.yaml:4:5: duplicate key "tool" (first at line 3, column 5) at /steps/0`},
		{"duplicate in input", "steps:\n  - id: a\n    input: {p: 1, p: 2}\n", `d.yaml:3:19: duplicate key "p" (first at line 3, column 13) at /steps/0/input`},
		{"case variant", "Steps: []\n", `d.yaml:1:1: unknown field "Steps" (did you mean "steps"?)`},
		{"case variant nested", "steps:\n  - ID: a\n", `d.yaml:2:5: unknown field "ID" (did you mean "id"?) at /steps/0`},
		{"unknown", "name: a\ncolour: red\n", `d.yaml:2:1: unknown field "colour"`},
		{"merge key", "base: &b {name: a}\n<<: *b\n", `d.yaml:2:1: merge key << is not allowed: write the keys out`},
		{"key not a string", "extra: {1: a}\n", `d.yaml:1:9: key "1" is not a string: quote it at /extra`},
		{"second document", "name: a\n---\nname: b\n", `d.yaml:2:1: a second YAML document`},
		{"empty", "", `d.yaml: empty document`},
		{"syntax", "name: a\nsteps: [\n", `d.yaml:3: invalid YAML: did not find expected node content`},
		{"tab", "name: a\n\tsteps: []\n", `d.yaml:2: invalid YAML: found a tab character that violates indentation`},
		{"wrong type", "steps:\n  - id: [1]\n", `d.yaml:2:9: cannot decode array into string at /steps/0/id`},
		{"NUL in a key", "extra: {\"a\\0\": 1}\n", `d.yaml:1:9: key "a\x00" holds NUL at /extra`},
		{"invalid UTF-8", "name: \xff\n", `d.yaml:1:7: invalid UTF-8`},
		{"not JSON", "name: .inf\n", `d.yaml:1:7: value ".inf" has no JSON form at /name`},
		{"binary not UTF-8", "name: !!binary /w==\n", `d.yaml:1:7: string is not UTF-8 at /name`},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n", `document expands to too many values (aliases)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d doc
			var err error
			if tt.name == "alias bomb" {
				var v any
				err = YAML("d.yaml", []byte(tt.doc), &v)
			} else {
				err = YAML("d.yaml", []byte(tt.doc), &d)
			}
			if err == nil {
				t.Fatalf("got %+v, want error %s", d, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %s, want %s", err, tt.want)
			}
		})
	}
}

func TestYAMLDecodes(t *testing.T) {
	raw := "name: n\nsteps:\n  - id: a\n    tool: x\n    input: {B: 1, b: 2.5, on: yes, when: 2026-01-02}\nheaders: {A: '1', a: '2'}\nextra: &e {k: v}\n"
	var got doc
	if err := YAML("d.yaml", []byte(raw), &got); err != nil {
		t.Fatal(err)
	}
	want := doc{Name: "n", Steps: []step{{ID: "a", Tool: "x", Input: json.RawMessage(`{"B":1,"b":2.5,"on":"yes","when":"2026-01-02T00:00:00Z"}`)}},
		Headers: map[string]string{"A": "1", "a": "2"}, Extra: map[string]any{"k": "v"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
