package agent

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"gopkg.in/yaml.v3"

	"github.com/scripthost/scripthost/internal/document"
	"github.com/scripthost/scripthost/internal/yamlerr"
)

// TaskSchema is the JSON Schema of a task file.
//
//go:embed task.schema.json
var TaskSchema []byte

// Task is a goal and the steps that reach it.
type Task struct {
	Goal      string       `json:"goal"`
	Model     *ModelConfig `json:"model,omitempty"`
	TurnLimit int          `json:"turn_limit,omitempty"`
	Budget    *Budget      `json:"budget,omitempty"`
	Retry     *Retry       `json:"retry,omitempty"`
	Steps     []Step       `json:"steps"`
}

// ModelConfig names the model server. Flags and the environment override it.
type ModelConfig struct {
	BaseURL string `json:"base_url,omitempty"`
	Name    string `json:"name,omitempty"`
	// APIKeyEnv names the environment variable holding the key; the key itself never
	// appears in a task file.
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// Budget bounds tokens. ContextTokens caps one request (the context is trimmed to
// fit); StepTokens and TaskTokens cap the tokens used (prompt + completion) by a step
// and by the whole task. Zero means no limit.
type Budget struct {
	ContextTokens int `json:"context_tokens,omitempty"`
	StepTokens    int `json:"step_tokens,omitempty"`
	TaskTokens    int `json:"task_tokens,omitempty"`
}

// Retry configures retries of transient failures (model server unreachable, 429, 5xx,
// timeouts; network errors of read-only tools): MaxRetries retries after BaseMS, then
// twice as long each time. Defaults: 3 retries after 1 s, 2 s and 4 s.
type Retry struct {
	MaxRetries *int `json:"max_retries,omitempty"`
	BaseMS     int  `json:"base_ms,omitempty"`
}

// Check is a command that must exit 0 for a step to be complete.
type Check struct {
	Program string   `json:"program"`
	Args    []string `json:"args,omitempty"`
}

// Step is one unit of work the model carries out with tools.
type Step struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Criteria    string   `json:"criteria,omitempty"`
	Action      string   `json:"action,omitempty"`
	DependsOn   []string `json:"depends_on,omitempty"`
	// Files are workspace files whose contents go into the step's context.
	Files []string `json:"files,omitempty"`
	// Produces are files that must exist before the step may complete.
	Produces  []string `json:"produces,omitempty"`
	Check     *Check   `json:"check,omitempty"`
	TurnLimit int      `json:"turn_limit,omitempty"`
	TimeoutMS int      `json:"timeout_ms,omitempty"`
	Budget    *Budget  `json:"budget,omitempty"`
	Retry     *Retry   `json:"retry,omitempty"`
}

// TaskError is a task file that cannot be run: each problem names where it is.
type TaskError struct {
	File     string
	Problems []string
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("agent: task %s: %s", e.File, strings.Join(e.Problems, "; "))
}

var taskSchema = func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(TaskSchema))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:///task.schema.json", doc); err != nil {
		panic(err)
	}
	return c.MustCompile("mem:///task.schema.json")
}()

// ParseTask reads a task from JSON or YAML (chosen by name's extension; .json is
// JSON, anything else YAML, which also reads JSON), validates it against TaskSchema
// and checks the steps' dependencies. Errors name the file, the field path and,
// for YAML, the line.
func ParseTask(name string, raw []byte) (*Task, error) {
	var root yaml.Node
	var value any
	// The schema sees one value per key: a key twice, anything after the document, text
	// that is not UTF-8 and keys with NUL are refused first, with their line
	// (internal/document). Unknown keys, case variants among them, are the schema's.
	// Both give JSON values with json.Number numbers, the types the validator wants.
	if strings.EqualFold(filepath.Ext(name), ".json") {
		if err := document.JSON("", raw, &value); err != nil {
			return nil, &TaskError{File: name, Problems: []string{err.Error()}}
		}
	} else {
		if err := yaml.Unmarshal(raw, &root); err != nil {
			return nil, &TaskError{File: name, Problems: []string{yamlerr.Fix(err).Error()}}
		}
		if err := document.YAML("", raw, &value); err != nil {
			return nil, &TaskError{File: name, Problems: []string{err.Error()}}
		}
	}
	if err := taskSchema.Validate(value); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &TaskError{File: name, Problems: []string{err.Error()}}
		}
		var problems []string
		for _, leaf := range leaves(ve) {
			loc := leaf.InstanceLocation
			if ap, ok := leaf.ErrorKind.(*kind.AdditionalProperties); ok && len(ap.Properties) > 0 {
				// Point at the first unknown key, not at its object.
				loc = append(append([]string(nil), loc...), ap.Properties[0])
			}
			where := "/" + strings.Join(leaf.InstanceLocation, "/")
			if line := lineOf(&root, loc); line > 0 {
				where = fmt.Sprintf("line %d: %s", line, where)
			}
			problems = append(problems, fmt.Sprintf("%s: %s", where, leaf.ErrorKind.LocalizedString(printer)))
		}
		sort.Strings(problems)
		return nil, &TaskError{File: name, Problems: problems}
	}
	b, _ := json.Marshal(value)
	var t Task
	// Strict again, so that a key the schema allows but Task lacks is not dropped.
	if err := document.JSON("", b, &t); err != nil {
		return nil, &TaskError{File: name, Problems: []string{err.Error()}}
	}
	if err := t.check(); err != nil {
		return nil, &TaskError{File: name, Problems: []string{err.Error()}}
	}
	return &t, nil
}

func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// lineOf finds the line of the YAML node at path, or of its nearest ancestor.
func lineOf(root *yaml.Node, path []string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind == 0 {
		return 0
	}
	line := n.Line
	for _, p := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
					line = n.Content[i].Line
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i < len(n.Content) {
				next = n.Content[i]
			}
		}
		if next == nil {
			return line
		}
		n = next
		line = n.Line
	}
	return line
}

// check verifies what the schema cannot: unique step ids, known dependencies, no
// cycles.
func (t *Task) check() error {
	ids := map[string]int{}
	for i, s := range t.Steps {
		if j, dup := ids[s.ID]; dup {
			return fmt.Errorf("/steps/%d/id: step id %q is also step %d's", i, s.ID, j)
		}
		ids[s.ID] = i
	}
	for i, s := range t.Steps {
		for _, d := range s.DependsOn {
			if _, ok := ids[d]; !ok {
				return fmt.Errorf("/steps/%d/depends_on: unknown step %q", i, d)
			}
			if d == s.ID {
				return fmt.Errorf("/steps/%d/depends_on: step %q depends on itself", i, d)
			}
		}
	}
	_, err := t.Order()
	return err
}

// Order returns the steps in dependency order: each after the steps it depends on,
// otherwise in file order.
func (t *Task) Order() ([]Step, error) {
	done := map[string]bool{}
	var out []Step
	for len(out) < len(t.Steps) {
		progress := false
		for _, s := range t.Steps {
			if done[s.ID] {
				continue
			}
			ready := true
			for _, d := range s.DependsOn {
				ready = ready && done[d]
			}
			if ready {
				done[s.ID], progress = true, true
				out = append(out, s)
			}
		}
		if !progress {
			var left []string
			for _, s := range t.Steps {
				if !done[s.ID] {
					left = append(left, s.ID)
				}
			}
			return nil, fmt.Errorf("/steps: the dependencies of %s form a cycle", strings.Join(left, ", "))
		}
	}
	return out, nil
}
