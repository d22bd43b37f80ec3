package host

import (
	"errors"
	"fmt"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/codetool"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

// ToolOptions say which built-in tools NewTools registers over a workspace.
type ToolOptions struct {
	// Workspace confines the file tools, the commands and the code tools (required).
	// The caller keeps ownership of it.
	Workspace *workspace.Workspace
	// Commands, when set, registers plan.run_command with this configuration; its
	// Workspace is set from the field above.
	Commands *command.Config
	// CodeIndex is the code index's database file; empty means codegraph.db in the
	// workspace.
	CodeIndex string
	// PlanTools registers the code tools of plans and agent sessions
	// (codetool.Tools.PlanTools, which change code) instead of the read-only queries
	// workflows get (codetool.Tools.WorkflowTools).
	PlanTools bool
}

// Tools is a registry of the built-in tools over one workspace, with the parts that
// serve them, which the plan executor and the agent also use directly.
type Tools struct {
	// Registry holds every tool registered; add your own with Register.
	Registry *hostfuncs.Registry
	// Commands runs plan.run_command; nil without ToolOptions.Commands.
	Commands *command.Runner
	// Code answers the code tools.
	Code *codetool.Tools
}

// CommandsError is NewTools' refusal of the command configuration: a program that is
// not on PATH or named with a path, or no OS sandbox to run commands in. It is the
// operator's to fix.
type CommandsError struct{ Err error }

func (e *CommandsError) Error() string { return "host: commands: " + e.Err.Error() }
func (e *CommandsError) Unwrap() error { return e.Err }

// NewTools builds the registry of the built-in tools over opts.Workspace: the Files.*
// and plan.file_* tools, plan.run_command when opts.Commands is set, and the code
// tools. This is the one place those tools are put together: a Host, the plan and
// agent commands and the TypeScript declarations all take them from here. Close
// releases the code index.
func NewTools(opts ToolOptions) (*Tools, error) {
	if opts.Workspace == nil {
		return nil, errors.New("host: tools need a workspace")
	}
	t := &Tools{Registry: hostfuncs.NewRegistry()}
	if err := t.Registry.Register(opts.Workspace.Tools()...); err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	if opts.Commands != nil {
		cfg := *opts.Commands
		cfg.Workspace = opts.Workspace
		runner, err := command.New(cfg)
		if err != nil {
			return nil, &CommandsError{Err: err}
		}
		t.Commands = runner
		if err := t.Registry.Register(runner.Tool()); err != nil {
			return nil, fmt.Errorf("host: %w", err)
		}
	}
	code, err := codetool.New(codetool.Config{Workspace: opts.Workspace, Index: opts.CodeIndex})
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	t.Code = code
	codeTools := code.WorkflowTools()
	if opts.PlanTools {
		codeTools = code.PlanTools()
	}
	if err := t.Registry.Register(codeTools...); err != nil {
		_ = code.Close()
		return nil, fmt.Errorf("host: %w", err)
	}
	return t, nil
}

// Close releases the code index when it was opened; it does not close the workspace.
func (t *Tools) Close() error { return t.Code.Close() }
