package agent

import (
	"testing"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/codetool"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

// TestCodeToolsOffered: the code tools registered beside the file tools are offered to
// the model under their own names, the splices approved as file writes.
func TestCodeToolsOffered(t *testing.T) {
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	code, err := codetool.New(codetool.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(append(ws.Tools(), code.PlanTools()...)...); err != nil {
		t.Fatal(err)
	}
	ts, err := newToolset(reg, DefaultBindings)
	if err != nil {
		t.Fatal(err)
	}
	for name, class := range map[string]string{"symbols_in_file": "", "references_to_symbol_name": "", "references_from_file_to_symbol_name": "",
		"splice_patch": ClassFileWrite, "splice_plan": ClassFileWrite, "lsp_check": ""} {
		b, ok := ts.byName[name]
		if !ok {
			t.Errorf("%s is not offered", name)
			continue
		}
		if b.Class != class {
			t.Errorf("%s: class %q, want %q", name, b.Class, class)
		}
	}
}
