package codetool

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// Diagnostic is one finding of a checker.
type Diagnostic struct {
	Level   string `json:"level"` // error, warning or note
	Message string `json:"message"`
	// File is relative to the workspace root.
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Code is the checker's code: E0308 (rustc), TS2322 (tsc), the go/types error
	// code name or the vet analyzer (Go).
	Code string `json:"code,omitempty"`
}

// CheckResult is what lsp_check answers. ExitCode is the checker's; it is not zero
// when the project has errors, which fails a plan step.
type CheckResult struct {
	Checker     string       `json:"checker"`
	Command     []string     `json:"command"`
	Project     string       `json:"project"`
	ExitCode    int          `json:"exit_code"`
	OK          bool         `json:"ok"`
	Errors      int          `json:"errors"`
	Warnings    int          `json:"warnings"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	// Stderr is the checker's error output when no diagnostic could be read from it.
	Stderr string `json:"stderr,omitempty"`
}

// markers name the file that makes a directory a project, and its checker, in the
// order they are tried.
var markers = []struct{ file, checker string }{
	{"go.mod", "go"}, {"Cargo.toml", "cargo"}, {"tsconfig.json", "tsc"}, {"package.json", "tsc"},
}

func (t *Tools) checkTool() *hostfuncs.Tool {
	tool := &hostfuncs.Tool{
		Namespace: PlanNamespace, Method: "lsp_check",
		Description: "Run the checker of the project holding path (go build and go vet for go.mod, cargo check for Cargo.toml, tsc --noEmit for tsconfig.json or package.json) and return its diagnostics: level, message, file, line, column, code. A project with errors answers a non-zero exit_code.",
		InputSchema: schema(map[string]string{"path": `{"type":"string"}`}),
		ReadOnly:    hostfuncs.ReadOnlyAlways,
	}
	tool.Execute = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Path string `json:"path"`
		}
		if len(bytes.TrimSpace(input)) > 0 {
			if err := decode(tool.Name(), input, &in); err != nil {
				return nil, err
			}
		}
		res, err := t.Check(ctx, in.Path)
		if err != nil {
			return nil, err
		}
		return encode(res)
	}
	return tool
}

// Check runs the checker of the project that holds p (a directory or file of the
// workspace; "" is the root): the nearest directory at or above it, inside the
// workspace, with a go.mod, Cargo.toml, tsconfig.json or package.json.
func (t *Tools) Check(ctx context.Context, p string) (*CheckResult, error) {
	const op = "lsp_check"
	if p == "" {
		p = "."
	}
	clean, err := t.cfg.Workspace.Clean(op, p)
	if err != nil {
		return nil, err
	}
	ws := t.cfg.Workspace
	dir := clean
	if ok, isDir, err := ws.Exists(op, clean); err != nil {
		return nil, err
	} else if !ok {
		return nil, logicErr(op, "not_found", "%s does not exist", p)
	} else if !isDir {
		dir = path.Dir(clean)
	}
	for {
		for _, m := range markers {
			if ok, isDir, _ := ws.Exists(op, path.Join(dir, m.file)); ok && !isDir {
				return t.run(ctx, op, m.checker, dir)
			}
		}
		if dir == "." {
			return nil, logicErr(op, CodeNoProject, "no go.mod, Cargo.toml, tsconfig.json or package.json at or above %s in the workspace", p)
		}
		dir = path.Dir(dir)
	}
}

func (t *Tools) run(ctx context.Context, op, checker, dir string) (*CheckResult, error) {
	abs := filepath.Join(t.cfg.Workspace.Dir(), filepath.FromSlash(dir))
	switch checker {
	case "go":
		res, err := t.exec(ctx, op, abs, dir, "go build", "go", "build", "-json", "./...")
		if err != nil || res.ExitCode != 0 {
			return res, err
		}
		return t.exec(ctx, op, abs, dir, "go vet", "go", "vet", "-json", "./...")
	case "cargo":
		return t.exec(ctx, op, abs, dir, "cargo check", "cargo", "check", "--quiet", "--message-format=json")
	}
	tsc := filepath.Join(abs, "node_modules", ".bin", "tsc")
	if _, err := t.cfg.LookPath(tsc); err != nil {
		tsc = "tsc"
	}
	return t.exec(ctx, op, abs, dir, "tsc", tsc, "--noEmit", "--pretty", "false", "-p", ".")
}

// exec runs one checker and reads its diagnostics.
func (t *Tools) exec(ctx context.Context, op, abs, dir, checker, prog string, args ...string) (*CheckResult, error) {
	bin, err := t.cfg.LookPath(prog)
	if err != nil {
		return nil, logicErr(op, CodeCheckerUnavailable, "%s cannot run: %s is not installed (%v)", checker, prog, err)
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.CheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = abs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	res := &CheckResult{Checker: checker, Command: append([]string{prog}, args...), Project: dir, Diagnostics: []Diagnostic{}}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeTimeout, Op: op,
			Message: fmt.Sprintf("%s did not finish within %s and was killed", checker, t.cfg.CheckTimeout)}
	case errors.As(runErr, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case runErr != nil:
		return nil, logicErr(op, CodeCheckerUnavailable, "%s cannot run: %s", checker, t.hidePaths(runErr.Error()))
	}
	rel := func(f string) string { return t.relFile(abs, dir, f) }
	switch checker {
	case "go build":
		res.Diagnostics = goBuildDiagnostics(stdout.Bytes(), rel)
	case "go vet":
		res.Diagnostics = goVetDiagnostics(append(stdout.Bytes(), stderr.Bytes()...), rel)
	case "cargo check":
		res.Diagnostics = cargoDiagnostics(stdout.Bytes(), rel)
	default:
		res.Diagnostics = tscDiagnostics(stdout.Bytes(), rel)
	}
	for i, d := range res.Diagnostics {
		// A checker's message may name a file by its place on the host.
		res.Diagnostics[i].Message = t.hidePaths(d.Message)
		switch d.Level {
		case "error":
			res.Errors++
		case "warning":
			res.Warnings++
		}
	}
	if res.ExitCode != 0 && res.Errors == 0 && res.Warnings == 0 {
		// The checker failed without a diagnostic we understand: its own words.
		out := strings.TrimSpace(stderr.String() + "\n" + stdout.String())
		if len(out) > 4096 {
			out = out[:4096] + "…"
		}
		out = t.hidePaths(out)
		res.Stderr = out
		if checker == "cargo check" && strings.Contains(out, "could not find") {
			return nil, logicErr(op, CodeCheckerUnavailable, "%s cannot run: %s", checker, firstLine(out))
		}
	}
	res.OK = res.ExitCode == 0 && res.Errors == 0
	return res, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// relFile turns a checker's file name (absolute, or relative to the project) into a
// workspace-relative one.
func (t *Tools) relFile(abs, dir, f string) string {
	if f == "" {
		return ""
	}
	if !filepath.IsAbs(f) {
		f = filepath.Join(abs, f)
	}
	if r, err := filepath.Rel(t.cfg.Workspace.Dir(), f); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return f
}

var goPosRE = regexp.MustCompile(`^(.+?\.go):(\d+):(?:(\d+):)? (.*)$`)

// goBuildDiagnostics reads go build -json: compiler messages are build-output lines
// "file:line:col: message".
func goBuildDiagnostics(out []byte, rel func(string) string) []Diagnostic {
	diags := []Diagnostic{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var ev struct {
			Action string
			Output string
		}
		if err := dec.Decode(&ev); err != nil {
			break
		}
		if ev.Action != "build-output" {
			continue
		}
		for _, line := range strings.Split(ev.Output, "\n") {
			m := goPosRE.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			ln, _ := strconv.Atoi(m[2])
			col, _ := strconv.Atoi(m[3])
			diags = append(diags, Diagnostic{Level: "error", Message: m[4], File: rel(m[1]), Line: ln, Column: col, Code: goTypesCode(m[4])})
		}
	}
	return diags
}

// goTypesCodes name a compiler message by the go/types error code it comes from
// (golang.org/x/tools/internal/typesinternal); the compiler prints messages only.
var goTypesCodes = []struct {
	prefix, code string
}{
	{"cannot use ", "IncompatibleAssign"},
	{"undefined: ", "UndeclaredName"},
	{"declared and not used", "UnusedVar"},
	{"\" imported and not used", "UnusedImport"},
	{"missing return", "MissingReturn"},
	{"too many return values", "WrongResultCount"},
	{"not enough return values", "WrongResultCount"},
	{"not enough arguments in call", "WrongArgCount"},
	{"too many arguments in call", "WrongArgCount"},
	{"invalid operation: ", "MismatchedTypes"},
	{"cannot convert ", "InvalidConversion"},
	{"redeclared in this block", "DuplicateDecl"},
	{"has no field or method", "MissingFieldOrMethod"},
	{"syntax error", "SyntaxError"},
}

func goTypesCode(msg string) string {
	for _, c := range goTypesCodes {
		if strings.HasPrefix(msg, c.prefix) || (!strings.HasSuffix(c.prefix, " ") && strings.Contains(msg, c.prefix)) {
			return c.code
		}
	}
	return "compile"
}

// goVetDiagnostics reads go vet -json (stdout since Go 1.25, stderr before): JSON objects {package: {analyzer: [{posn,
// message}]}} between "# package" lines.
func goVetDiagnostics(out []byte, rel func(string) string) []Diagnostic {
	diags := []Diagnostic{}
	var js bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "#") {
			js.Write(sc.Bytes())
			js.WriteByte('\n')
		}
	}
	dec := json.NewDecoder(&js)
	for {
		var pkgs map[string]map[string]json.RawMessage
		if err := dec.Decode(&pkgs); err != nil {
			break
		}
		for _, analyzers := range pkgs {
			for name, raw := range analyzers {
				var found []struct {
					Posn    string `json:"posn"`
					Message string `json:"message"`
				}
				if json.Unmarshal(raw, &found) != nil {
					continue // {"error": …}: the package did not type-check
				}
				for _, f := range found {
					d := Diagnostic{Level: "warning", Message: f.Message, Code: name}
					if m := goPosRE.FindStringSubmatch(f.Posn + ": x"); m != nil {
						d.File = rel(m[1])
						d.Line, _ = strconv.Atoi(m[2])
						d.Column, _ = strconv.Atoi(m[3])
					}
					diags = append(diags, d)
				}
			}
		}
	}
	return diags
}

// cargoDiagnostics reads cargo check --message-format=json: compiler-message lines.
func cargoDiagnostics(out []byte, rel func(string) string) []Diagnostic {
	diags := []Diagnostic{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var msg struct {
			Reason  string `json:"reason"`
			Message struct {
				Level   string `json:"level"`
				Message string `json:"message"`
				Code    *struct {
					Code string `json:"code"`
				} `json:"code"`
				Spans []struct {
					File    string `json:"file_name"`
					Line    int    `json:"line_start"`
					Column  int    `json:"column_start"`
					Primary bool   `json:"is_primary"`
				} `json:"spans"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Reason != "compiler-message" {
			continue
		}
		m := msg.Message
		if len(m.Spans) == 0 && strings.HasPrefix(m.Message, "aborting due to") {
			continue
		}
		d := Diagnostic{Level: m.Level, Message: m.Message}
		if m.Code != nil {
			d.Code = m.Code.Code
		}
		for _, s := range m.Spans {
			if s.Primary {
				d.File, d.Line, d.Column = rel(s.File), s.Line, s.Column
				break
			}
		}
		if strings.HasPrefix(d.Level, "error") {
			d.Level = "error"
		}
		diags = append(diags, d)
	}
	return diags
}

var tscRE = regexp.MustCompile(`^(.+)\((\d+),(\d+)\): (error|warning|message) (TS\d+): (.*)$`)

// tscDiagnostics reads tsc --pretty false: "file(line,col): error TSnnnn: message".
func tscDiagnostics(out []byte, rel func(string) string) []Diagnostic {
	diags := []Diagnostic{}
	for _, line := range strings.Split(string(out), "\n") {
		m := tscRE.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if m == nil {
			if len(diags) > 0 && strings.HasPrefix(line, "  ") {
				diags[len(diags)-1].Message += "\n" + strings.TrimSpace(line)
			}
			continue
		}
		ln, _ := strconv.Atoi(m[2])
		col, _ := strconv.Atoi(m[3])
		diags = append(diags, Diagnostic{Level: m[4], Message: m[6], File: rel(m[1]), Line: ln, Column: col, Code: m[5]})
	}
	return diags
}
