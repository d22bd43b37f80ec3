package plan

import (
	"errors"
	"regexp"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

// Commands reports whether a program can be run; *command.Runner implements it.
type Commands interface {
	Available(name string) bool
}

// checkPrecondition checks every condition pc lists, in a fixed order, and returns
// the first that does not hold as an *Error with its E1xx code. A path outside the
// workspace is E302.
func checkPrecondition(ws *workspace.Workspace, cmds Commands, step string, pc *Precondition) error {
	if pc == nil {
		return nil
	}
	const op = "precondition"
	exists := func(p string) (bool, bool, error) {
		if ws == nil {
			return false, false, errorf(CodeInternal, step, "precondition on %q: no workspace is configured", p)
		}
		ok, dir, err := ws.Exists(op, p)
		if err != nil {
			return false, false, stepError(step, err)
		}
		return ok, dir, nil
	}
	if p := pc.FileExists; p != "" {
		ok, dir, err := exists(p)
		if err != nil {
			return err
		}
		if !ok || dir {
			return errorf(CodeFileMissing, step, "precondition file_exists: %q is not a file", p)
		}
	}
	if p := pc.DirExists; p != "" {
		ok, dir, err := exists(p)
		if err != nil {
			return err
		}
		if !ok || !dir {
			return errorf(CodeDirMissing, step, "precondition dir_exists: %q is not a directory", p)
		}
	}
	if p := pc.PathAbsent; p != "" {
		ok, _, err := exists(p)
		if err != nil {
			return err
		}
		if ok {
			return errorf(CodePathExists, step, "precondition path_absent: %q exists", p)
		}
	}
	if c := pc.CommandAvailable; c != "" {
		if cmds == nil || !cmds.Available(c) {
			return errorf(CodeCommandMissing, step, "precondition command_available: %q is not an allowed, installed program", c)
		}
	}
	if fm := pc.FileMatches; fm != nil {
		if _, _, err := exists(fm.Path); err != nil {
			return err
		}
		re, err := regexp.Compile(fm.Pattern)
		if err != nil {
			return errorf(CodeInvalidPlan, step, "file_matches pattern: %v", err)
		}
		data, err := ws.Read(op, fm.Path)
		if err != nil || !re.Match(data) {
			var se *scripthost.Error
			if errors.As(err, &se) && se.Code == scripthost.CodeSandboxViolation {
				return stepError(step, err)
			}
			return errorf(CodeNoMatch, step, "precondition file_matches: %q has no match for %q", fm.Path, fm.Pattern)
		}
	}
	return nil
}

// stepError classifies a tool's error as a plan code: sandbox violations E302,
// timeouts E304, anything else E301.
func stepError(step string, err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	code := CodeStepFailed
	var se *scripthost.Error
	if errors.As(err, &se) {
		switch se.Code {
		case scripthost.CodeSandboxViolation:
			code = CodeSandboxViolation
		case scripthost.CodeTimeout:
			code = CodeStepTimeout
		}
	}
	return &Error{Code: code, StepID: step, Message: err.Error(), Err: err}
}
