package agent

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/scripthost/scripthost/hostfuncs"
)

var printer = message.NewPrinter(language.English)

// Classes of mutating tool calls, each with its own approval setting.
const (
	ClassFileWrite  = "file_write"
	ClassFileDelete = "file_delete"
	ClassTerminal   = "terminal"
)

// Binding exposes a registry tool to the model under a function name.
type Binding struct {
	// Name is the function name the model sees (read_file, …).
	Name string
	// Tool is the registry tool's "Namespace.method".
	Tool string
	// Class is the approval class of its mutating calls; empty means terminal, the
	// strictest.
	Class string
}

// DefaultBindings are the model-facing names of the workspace, command and code tools:
// read_file, write_file, modify_file, delete_file, list_directory, search_code,
// run_terminal, and the code tools under their own names (splice_patch and
// splice_plan approved as file writes). Registry tools without a binding are offered
// as Namespace_method.
var DefaultBindings = []Binding{
	{Name: "read_file", Tool: "Files.read"},
	{Name: "write_file", Tool: "Files.write", Class: ClassFileWrite},
	{Name: "modify_file", Tool: "Files.modify", Class: ClassFileWrite},
	{Name: "delete_file", Tool: "Files.delete", Class: ClassFileDelete},
	{Name: "list_directory", Tool: "Files.list"},
	{Name: "search_code", Tool: "plan.file_search"},
	{Name: "run_terminal", Tool: "plan.run_command", Class: ClassTerminal},
	{Name: "symbols_in_file", Tool: "plan.symbols_in_file"},
	{Name: "references_to_symbol_name", Tool: "plan.references_to_symbol_name"},
	{Name: "references_from_file_to_symbol_name", Tool: "plan.references_from_file_to_symbol_name"},
	{Name: "splice_patch", Tool: "plan.splice_patch", Class: ClassFileWrite},
	{Name: "splice_plan", Tool: "plan.splice_plan", Class: ClassFileWrite},
	{Name: "lsp_check", Tool: "plan.lsp_check"},
}

// CompleteTool is the function the model calls to say the step is done.
const CompleteTool = "complete_step"

var completeSchema = json.RawMessage(`{"type":"object","properties":{"summary":{"type":"string","minLength":1}},"required":["summary"],"additionalProperties":false}`)

// toolset is the tools of one executor, by model-facing name.
type toolset struct {
	byName map[string]bound
	defs   []ToolDef
}

type bound struct {
	Binding
	tool *hostfuncs.Tool
}

// hidden are registry tools the model is not offered: plan-only duplicates of the
// bound file tools and the workflow topic tools.
var hidden = map[string]bool{"plan.file_read": true, "plan.file_write": true, "plan.file_create": true, "plan.file_glob": true, "Files.move": true}

func newToolset(reg *hostfuncs.Registry, bindings []Binding) (*toolset, error) {
	ts := &toolset{byName: map[string]bound{}}
	used := map[string]bool{}
	for _, b := range bindings {
		ns, m, _ := strings.Cut(b.Tool, ".")
		t, ok := reg.Lookup(ns, m)
		if !ok {
			continue // not configured (no command runner): not offered
		}
		ts.byName[b.Name] = bound{Binding: b, tool: t}
		used[b.Tool] = true
	}
	for _, t := range reg.Tools() {
		if used[t.Name()] || hidden[t.Name()] {
			continue
		}
		name := t.Namespace + "_" + t.Method
		if _, dup := ts.byName[name]; dup || name == CompleteTool {
			return nil, fmt.Errorf("agent: tool %s: function name %s is taken", t.Name(), name)
		}
		ts.byName[name] = bound{Binding: Binding{Name: name, Tool: t.Name()}, tool: t}
	}
	names := make([]string, 0, len(ts.byName))
	for n := range ts.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b := ts.byName[n]
		params := b.tool.InputSchema
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		ts.defs = append(ts.defs, ToolDef{Name: n, Description: b.tool.Description, Parameters: params})
	}
	ts.defs = append(ts.defs, ToolDef{Name: CompleteTool,
		Description: "Declare the current step complete, with a summary of what was done. Refused while the step's criteria are not met.",
		Parameters:  completeSchema})
	return ts, nil
}
