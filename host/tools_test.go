package host_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

func newWorkspace(t *testing.T) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func names(tools *host.Tools) map[string]bool {
	m := map[string]bool{}
	for _, t := range tools.Registry.Tools() {
		m[t.Name()] = true
	}
	return m
}

// TestNewTools: a workflow's registry has the file tools and the read-only code
// queries, a plan's has the plan code tools instead, plan.run_command is registered
// only with a command configuration, and the parts the plan executor uses are handed
// back.
func TestNewTools(t *testing.T) {
	ws := newWorkspace(t)
	wf, err := host.NewTools(host.ToolOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer wf.Close()
	got := names(wf)
	for _, want := range []string{"Files.write", "Code.symbols", "Code.references", "Code.referencesFrom"} {
		if !got[want] {
			t.Errorf("workflow tools lack %s: %v", want, got)
		}
	}
	if got["plan.run_command"] || got["plan.symbols_in_file"] || wf.Commands != nil {
		t.Errorf("workflow tools without commands: got %v, commands %v", got, wf.Commands)
	}

	pl, err := host.NewTools(host.ToolOptions{Workspace: ws, PlanTools: true, Commands: &command.Config{Unsafe: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	got = names(pl)
	for _, want := range []string{"Files.write", "plan.run_command", "plan.symbols_in_file"} {
		if !got[want] {
			t.Errorf("plan tools lack %s: %v", want, got)
		}
	}
	if got["Code.symbols"] || pl.Commands == nil || pl.Code == nil {
		t.Errorf("plan tools: got %v, commands %v, code %v", got, pl.Commands, pl.Code)
	}
}

// TestNewToolsRefusals: no workspace is refused, and a program that is not on PATH is
// a CommandsError naming it, the command package's error kept inside.
func TestNewToolsRefusals(t *testing.T) {
	if _, err := host.NewTools(host.ToolOptions{}); err == nil {
		t.Error("tools without a workspace were built")
	}
	_, err := host.NewTools(host.ToolOptions{Workspace: newWorkspace(t),
		Commands: &command.Config{Unsafe: true, Programs: []command.Program{{Name: "no-such-program-here"}}}})
	var ce *host.CommandsError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "host: commands: command: program no-such-program-here") {
		t.Fatalf("unknown program: got %v, want a CommandsError naming it", err)
	}
	if strings.HasPrefix(ce.Err.Error(), "host:") {
		t.Errorf("the command error inside is %q, want it as the command package gave it", ce.Err)
	}
}
