package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// run calls, for invocation c, before (if any), then the export c.fn, in an instance
// of the module, and classifies what went wrong. The instance is a new one (its
// _initialize run first), or, for a reusable module, one a previous invocation left
// reset to its state after initialization (warm.go). Only an instance whose invocation
// ended normally is kept, reset, for the next; any other is closed before run returns.
func (p *Program) run(ctx context.Context, c *call, before func(context.Context, api.Module) error) (sandbox.Result, error) {
	c.parent = ctx
	ctx, cancel := context.WithTimeout(ctx, c.limits.Timeout)
	defer cancel()

	c.console = &console{max: c.limits.MaxConsoleBytes}
	c.stdout = &stream{c: c.console, level: "log"}
	c.stderr = &stream{c: c.console, level: "error", keep: true}
	c.clock = p.newClock(c)
	ctx = context.WithValue(ctx, callKey{}, c)

	result := func() sandbox.Result {
		c.stdout.flush()
		c.stderr.flush()
		return sandbox.Result{Console: c.console.lines, ToolCalls: c.toolCalls}
	}

	var in *instance
	if before == nil && p.reusable && !p.eng.opts.FreshInstances {
		// In deterministic mode an instance whose initialization drew random
		// numbers is not reused: its state depends on another seed.
		in = p.pool.take(c.memoryPages(), c.clock.det)
	}
	if in != nil {
		in.io.c, in.mem.limit, c.mem = c, uint64(c.memoryPages())<<16, in.mem
		if err := in.resume(c); err != nil {
			in.close()
			return result(), err
		}
		p.reused.Add(1)
	} else {
		c.mem = p.newMemory(c.memoryPages())
		var err error
		if in, err = p.instantiate(ctx, c); err != nil {
			return result(), err
		}
		p.created.Add(1)
	}
	keep := false
	defer func() {
		in.io.c = nil
		if keep && in.reset() {
			p.pool.put(in)
			return
		}
		in.close()
	}()

	if before != nil {
		if err := in.guarded(ctx, c, func() error { return before(ctx, in.mod) }); err != nil {
			if se := (*scripthost.Error)(nil); errors.As(err, &se) && c.abort == nil {
				return result(), err
			}
			return result(), p.failure(c.parent, c, in.mod, c.fn, err)
		}
	}
	if err := in.call(ctx, c, in.fn(c.fn)); err != nil && !exitedOK(err) {
		return result(), p.failure(c.parent, c, in.mod, c.fn, err)
	}
	res := result()
	res.Value = c.value
	if res.Value == nil {
		res.Value = json.RawMessage("null")
	}
	keep = before == nil && c.abort == nil && !p.eng.opts.FreshInstances
	return res, nil
}

// exitedOK reports a guest that called proc_exit(0): it ends the handler normally.
func exitedOK(err error) bool {
	var exit *sys.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == 0
}

// failure classifies what a guest call of instance mod returned, after reading the
// largest memory growth the instance was refused.
func (p *Program) failure(parent context.Context, c *call, mod api.Module, where string, err error) error {
	if g := mod.ExportedGlobal(exportRefused); g != nil {
		c.refusedPages = g.Get()
	}
	return p.classify(parent, c, where, err)
}

// classify turns what a guest call returned into the invocation's error.
func (p *Program) classify(parent context.Context, c *call, where string, err error) error {
	if c.abort != nil {
		var se *scripthost.Error
		if c.guestFailed && c.refusedPages > 0 && errors.As(c.abort, &se) {
			// A guest that reports an error after it was refused memory (an
			// allocator's "out of memory" routed to fail) ran out of memory.
			return p.memoryLimit(c, where, fmt.Sprintf("failed (%s)", se.Message))
		}
		return c.abort
	}
	if c.stopped {
		// The invocation's context ended while the guest ran: whatever the guest
		// returned or trapped on after that, it was stopped.
		if perr := parent.Err(); perr != nil {
			return &scripthost.Error{Class: scripthost.ClassInternal, File: p.name, Op: where,
				Message: "wasm: invocation stopped: " + perr.Error(), Err: perr}
		}
		return (&sandbox.LimitError{Limit: "timeout",
			Detail: fmt.Sprintf("%s ran longer than %s", where, c.limits.Timeout)}).AsError()
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
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
	switch {
	case c.refusedPages > 0:
		return p.memoryLimit(c, where, how)
	case strings.Contains(head, "fatal error: out of memory"):
		return (&sandbox.LimitError{Limit: "memory", Detail: fmt.Sprintf(
			"%s %s: the guest runtime ran out of memory (%s); the cap is %d pages (%s)",
			where, how, firstLine(head), c.limits.MaxMemoryPages, pagesString(c.limits.MaxMemoryPages))}).AsError()
	case strings.Contains(head, "fatal error: stack overflow") || strings.Contains(head, "goroutine stack exceeds"):
		return (&sandbox.LimitError{Limit: "stack",
			Detail: fmt.Sprintf("%s %s: %s", where, how, firstLine(head))}).AsError()
	}
	return nil
}

// memoryLimit is the error of a guest that ended (how) after a memory.grow was
// refused, naming what it asked for and the limit that refused it: the module's
// declared maximum, the invocation's cap, or the 4 GiB a 32-bit memory can address.
func (p *Program) memoryLimit(c *call, where, how string) error {
	want := c.refusedPages
	asked := fmt.Sprintf("%s %s after the guest asked for %d bytes (%d pages) of linear memory", where, how, want<<16, want)
	capPages := c.limits.MaxMemoryPages
	var detail string
	switch {
	case p.info.hasMax && p.info.memMax < capPages && want > uint64(p.info.memMax):
		detail = fmt.Sprintf("%s; the module declares a maximum of %d pages (%s)", asked, p.info.memMax, pagesString(p.info.memMax))
	case want > maxPages:
		detail = fmt.Sprintf("%s, more than the %d pages (4 GiB) a 32-bit memory can address; the cap is %d pages (%s)",
			asked, maxPages, capPages, pagesString(capPages))
	default:
		detail = fmt.Sprintf("%s; the cap is %d pages (%s)", asked, capPages, pagesString(capPages))
		if p.tablePages > 0 {
			detail += fmt.Sprintf(", %d of them counted for the module's tables", p.tablePages)
		}
	}
	return (&sandbox.LimitError{Limit: "memory", Detail: detail}).AsError()
}

// memoryPages is the most pages the invocation's linear memory may hold: its cap
// less what the module's tables count for (checkMemory made sure it is no less).
func (c *call) memoryPages() uint32 {
	return c.limits.MaxMemoryPages - c.prog.tablePages
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
