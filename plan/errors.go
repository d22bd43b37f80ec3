package plan

import (
	"errors"
	"fmt"
)

// Codes name why a plan was refused or stopped. E0xx: the plan or its authorization;
// E1xx: a precondition; E2xx: a step's tool or arguments; E3xx: a step's execution.
// Each name carries its number (CodeE301StepFailed is "E301"), so that it is never the
// name of another package's word code (agent.CodeStepFailed is "step_failed").
const (
	CodeE001InvalidPlan  = "E001" // the plan is malformed
	CodeE002NotApproved  = "E002" // no authorization, or it is pending or denied
	CodeE003HashMismatch = "E003" // the authorization names another plan id or hash

	CodeE101FileMissing    = "E101" // precondition file_exists: file not found
	CodeE102ProjectMissing = "E102" // precondition project_exists: project not found
	CodeE103IndexMissing   = "E103" // precondition codegraph_exists: index not found
	CodeE104SymbolMissing  = "E104" // precondition symbol_exists: symbol not found
	CodeE105NoMatch        = "E105" // precondition file_matches failed
	CodeE106DirMissing     = "E106" // precondition dir_exists failed
	CodeE107PathExists     = "E107" // precondition path_absent failed
	CodeE108CommandMissing = "E108" // precondition command_available failed

	CodeE201ToolNotRegistered = "E201" // the tool is not registered
	CodeE202BadArguments      = "E202" // the arguments do not match the tool's input schema

	CodeE301StepFailed         = "E301" // the tool failed or a command exited non-zero
	CodeE302OutsideSandbox     = "E302" // a path or program outside the sandbox
	CodeE303ConfirmationDenied = "E303" // the step needed a confirmation that was denied
	CodeE304CheckerMissing     = "E304" // lsp_check: the project's checker cannot run
	CodeE305Blocked            = "E305" // a step it depends on failed
	CodeE306NeedsReconcile     = "E306" // an earlier attempt's outcome is unknown
	CodeE307StepTimeout        = "E307" // the step or its command ran out of time
	CodeE900Internal           = "E900" // the ledger or the executor failed
)

// Exit codes of a plan run. Refusals (E0xx, E2xx), unknown outcomes and internal
// failures exit 1.
const (
	ExitOK                 = 0
	ExitGeneral            = 1
	ExitStepFailed         = 30
	ExitSandboxViolation   = 32
	ExitConfirmationDenied = 33
	ExitStepTimeout        = 34
)

// ExitCodeOf maps a code to the CLI's exit code.
func ExitCodeOf(code string) int {
	switch {
	case code == "":
		return ExitOK
	case code == CodeE302OutsideSandbox:
		return ExitSandboxViolation
	case code == CodeE303ConfirmationDenied:
		return ExitConfirmationDenied
	case code == CodeE307StepTimeout:
		return ExitStepTimeout
	case code == CodeE301StepFailed, code == CodeE305Blocked, code == CodeE304CheckerMissing, len(code) == 4 && code[1] == '1':
		return ExitStepFailed
	}
	return ExitGeneral
}

// Error is a refusal or a stopped plan. Its Code is one of the E codes.
type Error struct {
	Code string
	// StepID names the step, when the error is about one.
	StepID  string
	Message string
	Err     error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.StepID != "" {
		return fmt.Sprintf("plan: %s: step %s: %s", e.Code, e.StepID, msg)
	}
	return fmt.Sprintf("plan: %s: %s", e.Code, msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the CLI exit code for the error.
func (e *Error) ExitCode() int { return ExitCodeOf(e.Code) }

// CodeOf returns the code of the first *Error in err's chain, or "" when there is none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func errorf(code, step, format string, args ...any) *Error {
	return &Error{Code: code, StepID: step, Message: fmt.Sprintf(format, args...)}
}
