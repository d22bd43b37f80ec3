package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// A task file means one thing: a key twice, in another case, or a second document
// would let a reader see one goal or check and the agent run another.
func TestParseTaskStrict(t *testing.T) {
	const steps = "steps:\n  - id: s\n    title: S\n"
	tests := []struct {
		name, file, src string
		want            string // the whole message
	}{
		{"goal twice", "t.yaml", "goal: read the notes\n" + steps + "goal: delete the notes\n",
			`agent: task t.yaml: line 5, column 1: duplicate key "goal" (first at line 1, column 1)`},
		{"goal quoted twice", "t.yaml", "goal: a\n\"g\\x6fal\": b\n" + steps,
			`agent: task t.yaml: line 2, column 1: duplicate key "goal" (first at line 1, column 1)`},
		{"check program twice", "t.yaml", "goal: g\nsteps:\n  - id: s\n    title: S\n    check: {program: go, program: rm}\n",
			`agent: task t.yaml: line 5, column 26: duplicate key "program" (first at line 5, column 13) at /steps/0/check`},
		{"case variant", "t.yaml", "goal: g\nGoal: h\n" + steps,
			`agent: task t.yaml: line 2: /: additional properties 'Goal' not allowed`},
		{"case variant in a step", "t.yaml", "goal: g\nsteps:\n  - id: s\n    title: S\n    Check: {program: rm}\n",
			`agent: task t.yaml: line 5: /steps/0: additional properties 'Check' not allowed`},
		{"second document", "t.yaml", "goal: g\n" + steps + "---\ngoal: h\n" + steps,
			`agent: task t.yaml: line 5, column 1: a second YAML document`},
		{"merge key", "t.yaml", "base: &b {goal: g}\n<<: *b\n" + steps,
			`agent: task t.yaml: line 2, column 1: merge key << is not allowed: write the keys out`},
		{"json goal twice", "t.json", `{"goal":"a","steps":[{"id":"s","title":"S"}],"goal":"b"}`,
			`agent: task t.json: line 1, column 46: duplicate key "goal" (first at line 1, column 2)`},
		{"json escaped key twice", "t.json", `{"goal":"a","steps":[{"id":"s","title":"S","t\u0069tle":"T"}]}`,
			`agent: task t.json: line 1, column 44: duplicate key "title" (first at line 1, column 32) at /steps/0`},
		{"json case variant", "t.json", `{"goal":"a","STEPS":[],"steps":[{"id":"s","title":"S"}]}`,
			`agent: task t.json: /: additional properties 'STEPS' not allowed`},
		{"json trailing data", "t.json", `{"goal":"a","steps":[{"id":"s","title":"S"}]} {}`,
			`agent: task t.json: line 1, column 47: data after the JSON document`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, err := ParseTask(tt.file, []byte(tt.src))
			if err == nil {
				t.Fatalf("got task %+v, want error %s", tk, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// The checked-in task files still parse.
func TestExampleTasksParse(t *testing.T) {
	files, _ := filepath.Glob("../scripts/agent/*.yaml")
	if len(files) == 0 {
		t.Fatal("got no example tasks, want scripts/agent/*.yaml")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseTask(f, raw); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
