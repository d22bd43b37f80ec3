package httptool_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/hostfuncs/httptool"
)

// A tools file means one thing: a key given twice, in another case, or a document
// after the first would let the file say one URL or header to a reader and send
// another.
func TestLoadStrict(t *testing.T) {
	const tool = `"namespace":"Svc","method":"a","url":"http://good.example/"`
	tests := []struct {
		name, file, content string
		want                string // after the file's directory
	}{
		{"url twice", "t.json", `[{` + tool + `,"url":"http://evil.example/"}]`,
			`t.json:1:63: duplicate key "url" (first at line 1, column 34) at /0`},
		{"tools twice", "t.json", `{"tools":[{` + tool + `}],"tools":[]}`,
			`t.json:1:74: duplicate key "tools" (first at line 1, column 2)`},
		{"url in capitals", "t.json", `[{"namespace":"Svc","method":"a","URL":"http://evil.example/"}]`,
			`t.json:1:34: tool 1 (Svc.a): unknown field "URL" (did you mean "url"?) at /0`},
		{"read_only in another case", "t.json", `{"tools":[{` + tool + `,"Read_Only":true}]}`,
			`t.json:1:72: tool 1 (Svc.a): unknown field "Read_Only" (did you mean "read_only"?) at /tools/0`},
		{"header twice", "t.json", `[{` + tool + `,"headers":{"X-Key":"a","X-Key":"b"}}]`,
			`t.json:1:86: duplicate key "X-Key" (first at line 1, column 74) at /0/headers`},
		{"schema keyword twice", "t.json", `[{` + tool + `,"input_schema":{"type":"object","type":"string"}}]`,
			`t.json:1:95: duplicate key "type" (first at line 1, column 79) at /0/input_schema`},
		{"trailing garbage", "t.json", `[{` + tool + `}] x`, `t.json:1:65: data after the JSON document`},
		{"a second document", "t.json", `[{` + tool + "}]\n" + `[{"namespace":"Svc","method":"b","url":"http://evil.example/"}]`,
			`t.json:2:1: data after the JSON document`},
		{"header in two cases", "t.json", `[{` + tool + `,"headers":{"Authorization":"Bearer a","authorization":"Bearer b"}}]`,
			`t.json: tool 1 (Svc.a): headers: "Authorization" and "authorization" name one header: keep one`},
		{"yaml url twice", "t.yaml", "- namespace: Svc\n  method: a\n  url: http://good.example/\n  url: http://evil.example/\n",
			`t.yaml:4:3: duplicate key "url" (first at line 3, column 3) at /0`},
		{"yaml url quoted twice", "t.yaml", "- namespace: Svc\n  method: a\n  url: http://good.example/\n  \"u\\x72l\": http://evil.example/\n",
			`t.yaml:4:3: duplicate key "url" (first at line 3, column 3) at /0`},
		{"yaml url in capitals", "t.yaml", "tools:\n  - namespace: Svc\n    method: a\n    Url: http://evil.example/\n",
			`t.yaml:4:5: tool 1 (Svc.a): unknown field "Url" (did you mean "url"?) at /tools/0`},
		{"yaml header twice", "t.yaml", "- namespace: Svc\n  method: a\n  url: http://good.example/\n  headers:\n    X-Key: a\n    X-Key: b\n",
			`t.yaml:6:5: duplicate key "X-Key" (first at line 5, column 5) at /0/headers`},
		{"yaml header in two cases", "t.yaml", "- namespace: Svc\n  method: a\n  url: http://good.example/\n  headers: {x-key: a, X-KEY: b}\n",
			`t.yaml: tool 1 (Svc.a): headers: "X-KEY" and "x-key" name one header: keep one`},
		{"yaml second document", "t.yaml", "- namespace: Svc\n  method: a\n  url: http://good.example/\n---\n- namespace: Svc\n  method: b\n  url: http://evil.example/\n",
			`t.yaml:4:1: a second YAML document`},
		{"yaml merge key", "t.yaml", "- &base {namespace: Svc, method: a, url: 'http://good.example/'}\n- <<: *base\n  method: b\n",
			`t.yaml:2:3: merge key << is not allowed: write the keys out at /1`},
		{"not an object", "t.yaml", "- url\n", `t.yaml:1:3: tool 1: cannot decode string into httptool.config at /0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools, err := httptool.Load(write(t, tt.file, tt.content), env)
			if err == nil {
				t.Fatalf("got %d tools, want error %s", len(tools), tt.want)
			}
			got := err.Error()
			if !strings.HasPrefix(got, "httptool: /") || !strings.HasSuffix(got, "/"+tt.want) {
				t.Errorf("got  %s\nwant httptool: DIR/%s", got, tt.want)
			}
		})
	}
}

// The checked-in tool files still load (the CLI's test files once their
// placeholders are filled in, as its tests do).
func TestExampleToolFilesLoad(t *testing.T) {
	fill := strings.NewReplacer("{{BASE}}", "http://127.0.0.1:1", "{{TIMEOUT}}", "5s")
	for _, f := range []string{
		"testdata/tools.yaml",
		"../../scripts/stripe/tools.yaml",
		"../../scripts/payments/tools.json",
		"../../cmd/scripthost/testdata/http/tools.json",
		"../../cmd/scripthost/testdata/http/tools-replay.json",
		"../../cmd/scripthost/testdata/http/tools-blind.json",
	} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		placeholder := func(string) (string, bool) { return "placeholder", true }
		if tools, err := httptool.Load(write(t, filepath.Base(f), fill.Replace(string(raw))), placeholder); err != nil || len(tools) == 0 {
			t.Errorf("%s: got %d tools, %v; want tools", f, len(tools), err)
		}
	}
}
