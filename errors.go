package scripthost

import (
	"errors"
	"fmt"
)

// ErrorClass is the classification every error that crosses a package edge carries.
type ErrorClass string

// Error classes.
const (
	ClassLogic      ErrorClass = "logic"
	ClassAuth       ErrorClass = "auth"
	ClassPermission ErrorClass = "permission"
	ClassNetwork    ErrorClass = "network"
	ClassInternal   ErrorClass = "internal"
)

// Codes name the specific condition inside a class. Scripts see them as `err.code`.
const (
	CodePhaseViolation   = "phase_violation"
	CodeSecondMutation   = "second_mutation"
	CodeInvalidInput     = "invalid_input"
	CodeUnknownTool      = "unknown_tool"
	CodeScript           = "script_error"
	CodeLimit            = "limit_exceeded"
	CodeTimeout          = "timeout"
	CodeToolPanic        = "tool_panic"
	CodeUncertain        = "uncertain_outcome"
	CodeInvalidWorkflow  = "invalid_workflow"
	CodeSandboxViolation = "sandbox_violation"
)

// ClassInfo is one row of the class table: where a run goes when an error of the class
// ends it, whether the class means the side effect certainly did not happen, and the exit
// code the CLI reports.
type ClassInfo struct {
	Status   RunStatus
	Definite bool
	ExitCode int
}

// classes is the one table mapping error classes to run statuses, definiteness and exit
// codes. Auth and permission failures are definite (the service refused) but need a
// person; network and internal errors leave the outcome of a mutation uncertain.
var classes = map[ErrorClass]ClassInfo{
	ClassLogic:      {Status: StatusFailedLogic, Definite: true, ExitCode: 3},
	ClassAuth:       {Status: StatusPausedApproval, Definite: true, ExitCode: 4},
	ClassPermission: {Status: StatusPausedApproval, Definite: true, ExitCode: 4},
	ClassNetwork:    {Status: StatusPausedTransient, Definite: false, ExitCode: 5},
	ClassInternal:   {Status: StatusFailedInternal, Definite: false, ExitCode: 6},
}

// Info returns the table row for c; unknown classes are treated as internal.
func (c ErrorClass) Info() ClassInfo {
	if info, ok := classes[c]; ok {
		return info
	}
	return classes[ClassInternal]
}

// Valid reports whether c is a known class.
func (c ErrorClass) Valid() bool {
	_, ok := classes[c]
	return ok
}

// Error is a classified error. Script errors carry the script location.
type Error struct {
	Class   ErrorClass
	Code    string
	Message string
	// Op names the operation or tool the error came from, when there is one.
	Op string
	// File, Line and Column locate a script error; Line is 0 when unknown.
	File   string
	Line   int
	Column int
	// Stack is the script's stack trace, when the engine has one.
	Stack string
	Err   error
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if e.Op != "" {
		msg = e.Op + ": " + msg
	}
	if e.Line > 0 {
		msg = fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, msg)
	}
	return fmt.Sprintf("%s error: %s", e.Class, msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a classified error with a formatted message.
func Errorf(class ErrorClass, code, format string, args ...any) *Error {
	return &Error{Class: class, Code: code, Message: fmt.Sprintf(format, args...)}
}

// LogicError returns a logic-class error with the given message.
func LogicError(format string, args ...any) *Error {
	return Errorf(ClassLogic, "", format, args...)
}

// Wrap classifies err, keeping it as the cause. A nil err gives nil.
func Wrap(class ErrorClass, code string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: class, Code: code, Message: err.Error(), Err: err}
}

// ClassOf returns the class of err: the class of the first *Error in its chain, or
// internal for any other error. A nil error has no class.
func ClassOf(err error) ErrorClass {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassInternal
}

// IsDefinite reports whether err means the side effect certainly did not happen.
func IsDefinite(err error) bool { return err != nil && ClassOf(err).Info().Definite }

// IsLogic reports whether err is a logic error.
func IsLogic(err error) bool { return ClassOf(err) == ClassLogic }

// IsAuth reports whether err is an auth error.
func IsAuth(err error) bool { return ClassOf(err) == ClassAuth }

// IsPermission reports whether err is a permission error.
func IsPermission(err error) bool { return ClassOf(err) == ClassPermission }

// IsNetwork reports whether err is a network error.
func IsNetwork(err error) bool { return ClassOf(err) == ClassNetwork }

// IsInternal reports whether err is an internal error.
func IsInternal(err error) bool { return ClassOf(err) == ClassInternal }

// ExitCode maps err to the CLI exit code: 0 for nil, the class table's code otherwise.
// Usage errors (bad flags, missing files) are reported by the CLI with ExitUsage.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	return ClassOf(err).Info().ExitCode
}

// Exit codes outside the class table.
const (
	ExitOK      = 0
	ExitGeneral = 1
	ExitUsage   = 2
)
