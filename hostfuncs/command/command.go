// Package command owns the run_command tool: it runs programs from an allowlist, with
// arguments passed as given (no shell, no interpolation), inside an OS sandbox
// (bubblewrap) where the workspace is the only writable place and nothing else of the
// host's files, home directories or network is reachable, as an unprivileged user
// without capabilities whoever starts the host (see sandbox.go), with a working directory
// confined to the workspace, a timeout that kills the whole process group, and
// captured, capped stdout and stderr.
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

// Defaults of Config.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxTime   = 10 * time.Minute
	DefaultMaxOutput = 1 << 20
)

// Program is one allowlisted program.
type Program struct {
	// Name is what a call names in "program".
	Name string
	// Path is the executable; empty means exec.LookPath(Name) at construction.
	Path string
	// ReadOnly marks calls of this program as reads (not recorded as mutations).
	ReadOnly bool
	// Network lets the program reach the network; without it the sandbox has none.
	Network bool
}

// Config configures the command tool.
type Config struct {
	// Workspace confines the working directory; commands start in its root unless a
	// call names a cwd inside it. Required.
	Workspace *workspace.Workspace
	// Programs is the allowlist. A program not listed cannot be run.
	Programs []Program
	// DefaultTimeout applies when a call gives no timeout_ms; MaxTimeout caps what a
	// call may ask for.
	DefaultTimeout time.Duration
	MaxTimeout     time.Duration
	// MaxOutput caps the bytes kept of each of stdout and stderr; the rest is dropped
	// and the result says it was truncated.
	MaxOutput int
	// Env is the environment of every command. Nil means PATH, HOME, LANG, LC_ALL,
	// TMPDIR and USER of this process, so that secrets in the host's environment do
	// not leak to commands.
	Env []string
	// Namespace and Method name the tool; defaults "plan" and "run_command".
	Namespace string
	Method    string
	// Hide names files or directories inside the workspace that commands must not
	// see (a ledger kept there); the sandbox covers them with empty ones.
	Hide []string
	// Unsafe runs commands without an OS sandbox when none is available (New fails
	// with ErrNoSandbox otherwise). Commands are then confined only by the allowlist
	// and the working directory: an allowlisted cat can read any file the host can.
	Unsafe bool
}

// Runner runs allowlisted commands. It is safe for concurrent use.
type Runner struct {
	cfg      Config
	programs map[string]Program
	bwrap    string // the bubblewrap program; "" when commands run unconfined
}

// New resolves every allowlisted program and returns the runner. A program that
// cannot be found is an error now rather than at the first call.
func New(cfg Config) (*Runner, error) {
	if cfg.Workspace == nil {
		return nil, errors.New("command: no workspace")
	}
	if cfg.DefaultTimeout <= 0 {
		cfg.DefaultTimeout = DefaultTimeout
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTime
	}
	if cfg.DefaultTimeout > cfg.MaxTimeout {
		cfg.DefaultTimeout = cfg.MaxTimeout
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.Namespace == "" {
		cfg.Namespace = workspace.PlanNamespace
	}
	if cfg.Method == "" {
		cfg.Method = "run_command"
	}
	if cfg.Env == nil {
		for _, k := range []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER"} {
			if v, ok := os.LookupEnv(k); ok {
				cfg.Env = append(cfg.Env, k+"="+v)
			}
		}
	}
	r := &Runner{cfg: cfg, programs: map[string]Program{}}
	if ok, why := Sandboxed(); ok {
		r.bwrap = bwrap.path
	} else if !cfg.Unsafe && len(cfg.Programs) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrNoSandbox, why)
	}
	for _, p := range cfg.Programs {
		if p.Name == "" || strings.ContainsAny(p.Name, "/\\") {
			return nil, fmt.Errorf("command: program name %q: give a bare name (and a Path when it is not on PATH)", p.Name)
		}
		look := p.Path
		if look == "" {
			look = p.Name
		}
		resolved, err := exec.LookPath(look)
		if err != nil {
			return nil, fmt.Errorf("command: program %s: %w", p.Name, err)
		}
		p.Path = resolved
		r.programs[p.Name] = p
	}
	return r, nil
}

// Sandboxed reports whether the runner's commands run in an OS sandbox.
func (r *Runner) Sandboxed() bool { return r.bwrap != "" }

// Programs returns the allowlisted names, sorted.
func (r *Runner) Programs() []string {
	out := make([]string, 0, len(r.programs))
	for n := range r.programs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Available reports whether name is allowlisted and its executable is still there.
func (r *Runner) Available(name string) bool {
	p, ok := r.programs[name]
	if !ok {
		return false
	}
	info, err := os.Stat(p.Path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// Request is one call of run_command.
type Request struct {
	Program   string   `json:"program"`
	Args      []string `json:"args"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
}

// Result is what a command did. ExitCode is -1 when the process was killed by a
// signal (TimedOut tells whether it was the timeout).
type Result struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	TimedOut        bool   `json:"timed_out"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
}

// Run runs one command. A program outside the allowlist or a cwd outside the
// workspace is a sandbox_violation; a command that runs and exits non-zero, or is
// killed at its timeout, is a Result, not an error.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	op := r.cfg.Namespace + "." + r.cfg.Method
	p, ok := r.programs[req.Program]
	if !ok {
		return Result{}, &scripthost.Error{
			Class: scripthost.ClassLogic, Code: scripthost.CodeSandboxViolation, Op: op,
			Message: fmt.Sprintf("program %q is not in the allowlist", req.Program),
		}
	}
	dir, err := r.cfg.Workspace.Abs(op, req.Cwd)
	if err != nil {
		return Result{}, err
	}
	timeout := r.cfg.DefaultTimeout
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	if timeout > r.cfg.MaxTimeout {
		timeout = r.cfg.MaxTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cmd := exec.CommandContext(tctx, p.Path, req.Args...)
	cmd.Args[0] = p.Name
	if r.bwrap != "" {
		cmd = exec.CommandContext(tctx, r.bwrap, r.sandboxArgs(p, dir, req.Args)...)
	}
	cmd.Dir = dir
	cmd.Env = r.cfg.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole group: a command's children would otherwise outlive it and keep
	// its pipes open.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	stdout := &capped{max: r.cfg.MaxOutput}
	stderr := &capped{max: r.cfg.MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if r.bwrap != "" {
		done, err := attachSeccomp(cmd)
		if err != nil {
			return Result{}, err
		}
		defer done()
	}
	runErr := cmd.Run()
	// Whatever happened, leave no member of the group behind.
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	res := Result{
		Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.dropped, StderrTruncated: stderr.dropped,
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// The caller gave up; the group is dead, but what the command did before is
		// not known to the caller's caller.
		return res, &scripthost.Error{Class: scripthost.ClassInternal, Code: scripthost.CodeTimeout, Op: op, Message: "cancelled", Err: ctx.Err()}
	}
	// Our timeout or the caller's deadline: the group was killed, the outcome is known.
	res.TimedOut = errors.Is(tctx.Err(), context.DeadlineExceeded)
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	} else if runErr != nil {
		return res, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: fmt.Sprintf("start %s: %v", req.Program, runErr), Err: runErr}
	}
	if res.TimedOut && res.ExitCode == 0 {
		// The command finished as the deadline passed; its exit status stands.
		res.TimedOut = false
	}
	return res, nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room < len(p) {
		c.dropped = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

func (c *capped) String() string { return strings.ToValidUTF8(c.buf.String(), "\uFFFD") }

// Tool returns run_command as a tool. A call is a mutation unless its program is
// marked ReadOnly.
func (r *Runner) Tool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: r.cfg.Namespace, Method: r.cfg.Method,
		Description: "Run an allowlisted program with arguments (no shell) in the workspace, with a timeout.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"program":{"type":"string","minLength":1},` +
			`"args":{"type":"array","items":{"type":"string"}},` +
			`"timeout_ms":{"type":"integer","minimum":1},` +
			`"cwd":{"type":"string"}},` +
			`"required":["program","args"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"exit_code":{"type":"integer"},"stdout":{"type":"string"},"stderr":{"type":"string"},` +
			`"timed_out":{"type":"boolean"}},"required":["exit_code","stdout","stderr","timed_out"]}`),
	}
	t.ReadOnly = func(input json.RawMessage) bool {
		var req Request
		if json.Unmarshal(input, &req) != nil {
			return false
		}
		p, ok := r.programs[req.Program]
		return ok && p.ReadOnly
	}
	t.Execute = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var req Request
		if err := json.Unmarshal(input, &req); err != nil {
			return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: t.Name(), Message: fmt.Sprintf("input: %v", err)}
		}
		res, err := r.Run(ctx, req)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("command: encode result: %w", err)
		}
		return b, nil
	}
	return t
}
