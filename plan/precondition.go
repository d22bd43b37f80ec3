package plan

import (
	"context"
	"errors"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

// Commands reports whether a program can be run; *command.Runner implements it.
type Commands interface {
	Available(name string) bool
}

// Symbols answers the code preconditions; *codetool.Tools implements it.
type Symbols interface {
	// IndexExists reports whether the code index file exists.
	IndexExists() bool
	// Defined reports whether symbol (a name or Type.name) is defined in file, or
	// anywhere when file is "", bringing the index up to date first.
	Defined(ctx context.Context, file, symbol string) (bool, error)
}

// projectMarkers are the files that make a directory a project.
var projectMarkers = []string{"go.mod", "Cargo.toml", "package.json"}

// checkPrecondition checks every condition pc lists, in a fixed order, and returns
// the first that does not hold as an *Error with its E1xx code. A path outside the
// workspace is E302.
func checkPrecondition(ctx context.Context, ws *workspace.Workspace, cmds Commands, syms Symbols, step string, pc *Precondition) error {
	if pc == nil {
		return nil
	}
	const op = "precondition"
	exists := func(p string) (bool, bool, error) {
		if ws == nil {
			return false, false, errorf(CodeE900Internal, step, "precondition on %q: no workspace is configured", p)
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
			return errorf(CodeE101FileMissing, step, "precondition file_exists: %q is not a file", p)
		}
	}
	if p := pc.ProjectExists; p != "" {
		found := false
		if slices.Contains(projectMarkers, path.Base(p)) {
			ok, dir, err := exists(p)
			if err != nil {
				return err
			}
			found = ok && !dir
		} else {
			for _, m := range projectMarkers {
				ok, dir, err := exists(path.Join(p, m))
				if err != nil {
					return err
				}
				if ok && !dir {
					found = true
					break
				}
			}
		}
		if !found {
			return errorf(CodeE102ProjectMissing, step, "precondition project_exists: no %s at %q", strings.Join(projectMarkers, ", "), p)
		}
	}
	if pc.CodegraphExists {
		if syms == nil || !syms.IndexExists() {
			return errorf(CodeE103IndexMissing, step, "precondition codegraph_exists: the code index has not been built (scripthost code index)")
		}
	}
	if se := pc.SymbolExists; se != nil {
		if syms == nil {
			return errorf(CodeE103IndexMissing, step, "precondition symbol_exists: no code index is configured")
		}
		if se.File != "" {
			ok, dir, err := exists(se.File)
			if err != nil {
				return err
			}
			if !ok || dir {
				return errorf(CodeE101FileMissing, step, "precondition symbol_exists: %q is not a file", se.File)
			}
		}
		ok, err := syms.Defined(ctx, se.File, se.Symbol)
		if err != nil {
			return asPlanError(step, err)
		}
		if !ok {
			where := "the workspace"
			if se.File != "" {
				where = strconv.Quote(se.File)
			}
			return errorf(CodeE104SymbolMissing, step, "precondition symbol_exists: %s defines no symbol %q", where, se.Symbol)
		}
	}
	if p := pc.DirExists; p != "" {
		ok, dir, err := exists(p)
		if err != nil {
			return err
		}
		if !ok || !dir {
			return errorf(CodeE106DirMissing, step, "precondition dir_exists: %q is not a directory", p)
		}
	}
	if p := pc.PathAbsent; p != "" {
		ok, _, err := exists(p)
		if err != nil {
			return err
		}
		if ok {
			return errorf(CodeE107PathExists, step, "precondition path_absent: %q exists", p)
		}
	}
	if c := pc.CommandAvailable; c != "" {
		if cmds == nil || !cmds.Available(c) {
			return errorf(CodeE108CommandMissing, step, "precondition command_available: %q is not an allowed, installed program", c)
		}
	}
	if fm := pc.FileMatches; fm != nil {
		if _, _, err := exists(fm.Path); err != nil {
			return err
		}
		re, err := regexp.Compile(fm.Pattern)
		if err != nil {
			return errorf(CodeE001InvalidPlan, step, "file_matches pattern: %v", err)
		}
		data, err := ws.Read(op, fm.Path)
		if err != nil || !re.Match(data) {
			var se *scripthost.Error
			if errors.As(err, &se) && se.Code == scripthost.CodeSandboxViolation {
				return stepError(step, err)
			}
			return errorf(CodeE105NoMatch, step, "precondition file_matches: %q has no match for %q", fm.Path, fm.Pattern)
		}
	}
	return nil
}

// checkerUnavailable is codetool.CodeCheckerUnavailable: lsp_check could not run the
// project's checker.
const checkerUnavailable = "checker_unavailable"

// stepError classifies a tool's error as a plan code: sandbox violations E302, a
// checker that cannot run E304, timeouts E307, anything else E301.
func stepError(step string, err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	code := CodeE301StepFailed
	var se *scripthost.Error
	if errors.As(err, &se) {
		switch se.Code {
		case scripthost.CodeSandboxViolation:
			code = CodeE302OutsideSandbox
		case scripthost.CodeTimeout:
			code = CodeE307StepTimeout
		case checkerUnavailable:
			code = CodeE304CheckerMissing
		}
	}
	return &Error{Code: code, StepID: step, Message: err.Error(), Err: err}
}
