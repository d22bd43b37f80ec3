package wasm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// run instantiates the module for c, calls _initialize when the module has it (Go
// c-shared guests), then before (if any), then the export c.fn, and classifies what
// went wrong. The instance is closed before run returns.
func (p *Program) run(ctx context.Context, c *call, before func(context.Context, api.Module) error) (sandbox.Result, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.limits.Timeout)
	defer cancel()

	c.console = &console{max: c.limits.MaxConsoleBytes}
	c.mem = newLinearMemory(p.info, c.limits.MaxMemoryPages)
	stdout := &stream{c: c.console, level: "log"}
	stderr := &stream{c: c.console, level: "error", keep: true}
	ctx = context.WithValue(ctx, callKey{}, c)
	ctx = experimental.WithMemoryAllocator(ctx, c.mem.allocator())

	result := func() sandbox.Result {
		stdout.flush()
		stderr.flush()
		return sandbox.Result{Console: c.console.lines, ToolCalls: c.toolCalls}
	}

	mod, err := p.eng.runtime.InstantiateModule(ctx, p.compiled, p.moduleConfig(c, stdout, stderr))
	if err != nil {
		return result(), p.classify(parent, c, "instantiate", err)
	}
	defer mod.Close(context.Background())

	// Exports are looked up once per instance.
	handler := mod.ExportedFunction(c.fn)
	if init := mod.ExportedFunction(exportInitialize); init != nil {
		if _, err := init.Call(ctx); err != nil && !exitedOK(err) {
			return result(), p.classify(parent, c, exportInitialize, err)
		}
	}
	if before != nil {
		if err := before(ctx, mod); err != nil {
			if se := (*scripthost.Error)(nil); errors.As(err, &se) && c.abort == nil {
				return result(), err
			}
			return result(), p.classify(parent, c, c.fn, err)
		}
	}
	if _, err := handler.Call(ctx); err != nil && !exitedOK(err) {
		return result(), p.classify(parent, c, c.fn, err)
	}
	res := result()
	res.Value = c.value
	if res.Value == nil {
		res.Value = json.RawMessage("null")
	}
	return res, nil
}

// exitedOK reports a guest that called proc_exit(0): it ends the handler normally.
func exitedOK(err error) bool {
	var exit *sys.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == 0
}

// moduleConfig is the instance configuration: no files, arguments, environment or
// sockets; clocks and randomness per Determinism and the engine's WASIConfig.
func (p *Program) moduleConfig(c *call, stdout, stderr *stream) wazero.ModuleConfig {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdout(stdout).
		WithStderr(stderr)
	if d := c.inv.Deterministic; d != nil {
		sec, nsec := d.Now.Unix(), int32(d.Now.Nanosecond())
		var mono int64
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(d.Seed))
		return cfg.
			WithWalltime(func() (int64, int32) { return sec, nsec }, 1).
			// A monotonic clock that never moves would hang a guest runtime waiting
			// on a timer; this one moves 1ms per reading, the same on every run.
			WithNanotime(func() int64 { mono += 1e6; return mono }, 1).
			WithRandSource(rand.NewChaCha8(seed))
	}
	cfg = cfg.WithRandSource(p.eng.randSource())
	if p.eng.opts.WASI.RealClock {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	}
	return cfg
}

// classify turns what a guest call returned into the invocation's error.
func (p *Program) classify(parent context.Context, c *call, where string, err error) error {
	if c.abort != nil {
		return c.abort
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded, sys.ExitCodeContextCanceled:
			if perr := parent.Err(); perr != nil {
				return &scripthost.Error{Class: scripthost.ClassInternal, File: p.name, Op: where,
					Message: "wasm: invocation stopped: " + perr.Error(), Err: perr}
			}
			return (&sandbox.LimitError{Limit: "timeout",
				Detail: fmt.Sprintf("%s ran longer than %s", where, c.limits.Timeout)}).AsError()
		}
		how := fmt.Sprintf("exited with code %d", exit.ExitCode())
		if lim := p.runtimeLimit(c, where, how); lim != nil {
			return lim
		}
		msg := fmt.Sprintf("%s %s", where, how)
		head := strings.TrimSpace(string(c.console.head))
		if head != "" {
			msg += ": " + firstLine(head)
		}
		e := &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeScript,
			File: p.name, Message: msg, Stack: head, Err: err}
		e.File, e.Line = goLocation(head, p.name)
		return e
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "stack overflow") || strings.HasPrefix(msg, "wasm error: stack overflow") {
		// wazero grows a guest's call stack up to a fixed 400 MB ceiling.
		return (&sandbox.LimitError{Limit: "stack",
			Detail: fmt.Sprintf("%s overflowed the wasm call stack", where)}).AsError()
	}
	if reason, trace, ok := strings.Cut(msg, "\nwasm stack trace:\n"); ok && strings.HasPrefix(reason, "wasm error: ") {
		reason = strings.TrimPrefix(reason, "wasm error: ")
		if lim := p.runtimeLimit(c, where, "trap: "+reason); lim != nil {
			return lim
		}
		// A Go guest's runtime prints a panic to stderr before it traps: its first line
		// and its trace say more than the trap does.
		msg := fmt.Sprintf("%s: wasm trap: %s", where, reason)
		stack := "\t" + trace
		if head := strings.TrimSpace(string(c.console.head)); head != "" {
			msg += ": " + firstLine(head)
			stack = head + "\n\nwasm stack trace:\n" + stack
		}
		e := &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeScript, File: p.name,
			Message: msg, Stack: stack, Err: err}
		e.File, e.Line = goLocation(stack, p.name)
		return e
	}
	return &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeScript, File: p.name,
		Message: fmt.Sprintf("%s: %v", where, err), Err: err}
}

// runtimeLimit recognises a guest that died of a limit: a refused memory growth, or
// the fatal message a Go guest's runtime prints to stderr before it aborts.
func (p *Program) runtimeLimit(c *call, where, how string) error {
	head := string(c.console.head)
	var detail string
	switch {
	case c.mem.refused > 0 && c.mem.declared:
		detail = fmt.Sprintf("%s %s after the guest asked for %d bytes of linear memory; the module declares a maximum of %d pages (%s)",
			where, how, c.mem.refused, p.info.memMax, pagesString(p.info.memMax))
	case c.mem.refused > 0:
		detail = fmt.Sprintf("%s %s after the guest asked for %d bytes of linear memory; the cap is %d pages (%s)",
			where, how, c.mem.refused, c.limits.MaxMemoryPages, pagesString(c.limits.MaxMemoryPages))
	case strings.Contains(head, "fatal error: out of memory"):
		detail = fmt.Sprintf("%s %s: the guest runtime ran out of memory (%s); the cap is %d pages (%s)",
			where, how, firstLine(head), c.limits.MaxMemoryPages, pagesString(c.limits.MaxMemoryPages))
	case strings.Contains(head, "fatal error: stack overflow") || strings.Contains(head, "goroutine stack exceeds"):
		return (&sandbox.LimitError{Limit: "stack",
			Detail: fmt.Sprintf("%s %s: %s", where, how, firstLine(head))}).AsError()
	default:
		return nil
	}
	return (&sandbox.LimitError{Limit: "memory", Detail: detail}).AsError()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// goFrame matches a source location in a Go panic trace ("\t/src/x.go:12 +0x1f") or in
// a wazero stack trace built from DWARF ("\t\t/src/x.go:12:3").
var goFrame = regexp.MustCompile(`(?m)^\t+(\S+\.go):(\d+)`)

// goLocation returns the first source location in trace outside the Go runtime and
// the guest SDK, or (name, 0) when there is none.
func goLocation(trace, name string) (string, int) {
	for _, m := range goFrame.FindAllStringSubmatch(trace, -1) {
		file := m[1]
		if strings.Contains(file, "/src/runtime/") || strings.Contains(file, "/sandbox/wasm/guest/") ||
			strings.Contains(file, "/src/internal/") {
			continue
		}
		line, _ := strconv.Atoi(m[2])
		return file, line
	}
	return name, 0
}
