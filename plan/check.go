package plan

import (
	"strings"

	"github.com/scripthost/scripthost/hostfuncs"
)

// DefaultNamespace is where a bare tool name in a plan (file_read) is looked up.
const DefaultNamespace = "plan"

// Aliases maps the other names plans use for the file tools to the registered ones.
var Aliases = map[string]string{
	"read_file":    "file_read",
	"write_file":   "file_write",
	"create_file":  "file_create",
	"search_files": "file_search",
	"glob_files":   "file_glob",
}

// ToolName splits a plan's tool name into namespace and method: "file_read" is
// plan.file_read, "Files.read" is Files.read; an alias (read_file) names the tool it
// stands for.
func ToolName(name string) (namespace, method string) {
	if ns, m, ok := strings.Cut(name, "."); ok {
		return ns, m
	}
	if m, ok := Aliases[name]; ok {
		return DefaultNamespace, m
	}
	return DefaultNamespace, name
}

// Authorize checks that auth approves exactly p: status approved (E002), and the same
// plan id and hash (E003).
func Authorize(p *Plan, auth *Authorization) error {
	if auth == nil {
		return errorf(CodeE002NotApproved, "", "plan %s has no authorization", p.PlanID)
	}
	if auth.Status != StatusApproved {
		status := auth.Status
		if status == "" {
			status = "missing"
		}
		return errorf(CodeE002NotApproved, "", "plan %s is not approved: status %s", p.PlanID, status)
	}
	if auth.PlanID != p.PlanID {
		return errorf(CodeE003HashMismatch, "", "authorization is for plan %q, not %q", auth.PlanID, p.PlanID)
	}
	if auth.PlanHash != p.Hash() {
		return errorf(CodeE003HashMismatch, "", "authorization is for plan hash %s, but the plan's hash is %s", auth.PlanHash, p.Hash())
	}
	return nil
}

// CheckTools checks every step against the registry, which is the whitelist: the tool
// must be registered (E201) and the arguments must match its input schema (E202:
// missing, extra or mistyped arguments).
func CheckTools(p *Plan, reg *hostfuncs.Registry) error {
	for _, s := range p.Steps {
		ns, m := ToolName(s.Tool)
		tool, ok := reg.Lookup(ns, m)
		if !ok {
			return errorf(CodeE201ToolNotRegistered, s.StepID, "unknown tool %q", s.Tool)
		}
		if problems, err := hostfuncs.ValidateJSON(tool.InputSchema, s.args()); err != nil {
			return &Error{Code: CodeE202BadArguments, StepID: s.StepID, Message: "tool " + s.Tool + ": " + err.Error(), Err: err}
		} else if len(problems) > 0 {
			return errorf(CodeE202BadArguments, s.StepID, "arguments do not match tool %s: %s", s.Tool, strings.Join(problems, "; "))
		}
	}
	return nil
}
