package js

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/file"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// classify turns an error from the runtime into the error Invoke returns.
func (in *instance) classify(err error) error {
	var (
		ie *goja.InterruptedError
		so *goja.StackOverflowError
		ex *goja.Exception
		se *scripthost.Error
	)
	switch {
	case errors.As(err, &ie):
		reason, _ := ie.Value().(error)
		if reason == nil {
			reason = fmt.Errorf("sandbox/js: interrupted: %v", ie.Value())
		}
		return in.reasonError(reason, ie.Stack())
	case errors.As(err, &so):
		le := &sandbox.LimitError{Limit: "stack", Detail: fmt.Sprintf("call stack deeper than %d frames", in.lim.MaxStackDepth)}
		return in.reasonError(le, so.Stack())
	case errors.As(err, &ex):
		return in.scriptError(ex.Value(), ex.Stack())
	case errors.As(err, &se):
		return err
	}
	if le, ok := errLimit(err); ok {
		return le.AsError()
	}
	return scripthost.Wrap(scripthost.ClassInternal, "", fmt.Errorf("sandbox/js: %w", err))
}

// reasonError is the error for an invocation interrupted for reason, located at the
// innermost script frame of stack when there is one.
func (in *instance) reasonError(reason error, stack []goja.StackFrame) error {
	if le, ok := reason.(*sandbox.LimitError); ok {
		e := le.AsError()
		in.locate(e, "", stack)
		return e
	}
	if errors.Is(reason, context.Canceled) || errors.Is(reason, context.DeadlineExceeded) {
		return fmt.Errorf("sandbox/js: %s: invocation stopped: %w", in.mod.name, reason)
	}
	// A tool error wrapping sandbox.ErrTerminate, returned as it is.
	return reason
}

// stackOf returns the script stack an interrupted or thrown error carries.
func stackOf(err error) []goja.StackFrame {
	var (
		ie *goja.InterruptedError
		ex *goja.Exception
	)
	switch {
	case errors.As(err, &ie):
		return ie.Stack()
	case errors.As(err, &ex):
		return ex.Stack()
	}
	return nil
}

// scriptError is the error for a value the script threw or a promise rejected with.
// A tool's error keeps the tool's Go error, class and code.
func (in *instance) scriptError(v goja.Value, stack []goja.StackFrame) error {
	msg, stackText := in.describeThrown(v)
	if stackText == "" && len(stack) > 0 {
		var b bytes.Buffer
		for _, f := range stack {
			b.WriteString("\tat ")
			f.Write(&b)
			b.WriteByte('\n')
		}
		stackText = b.String()
	}
	if obj, ok := v.(*goja.Object); ok {
		if orig, ok := in.toolErrors[obj]; ok {
			class, code, m := describe(orig)
			e := &scripthost.Error{Class: class, Code: code, Message: m, Err: orig}
			if name, ok := obj.Get("tool").Export().(string); ok {
				e.Op = name
			}
			in.locate(e, stackText, stack)
			return e
		}
	}
	e := &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeScript, Message: msg}
	in.locate(e, stackText, stack)
	return e
}

// locate fills e's file, line, column and stack from the first frame of the module in
// stackText (an Error's stack property) or, failing that, in frames.
func (in *instance) locate(e *scripthost.Error, stackText string, frames []goja.StackFrame) {
	e.Stack = stackText
	// Module frames are mapped through the inline source map, whose columns goja
	// reports 0-based; Column is 1-based like Line.
	re := in.mod.frameRE()
	if m := re.FindStringSubmatch(stackText); m != nil {
		e.File = fileName(m[1])
		e.Line, _ = strconv.Atoi(m[2])
		e.Column, _ = strconv.Atoi(m[3])
		e.Column++
		return
	}
	for _, f := range frames {
		if p := f.Position(); in.mod.sources[p.Filename] && p.Line > 0 {
			e.File, e.Line, e.Column = fileName(p.Filename), p.Line, p.Column+1
			if e.Stack == "" {
				var b bytes.Buffer
				for _, f := range frames {
					b.WriteString("\tat ")
					f.Write(&b)
					b.WriteByte('\n')
				}
				e.Stack = b.String()
			}
			return
		}
	}
}

// frameRE matches "file:line:col" in a goja stack trace, for a file of the module's
// sources: the module itself or, for a bundle, the files it was built from. The
// platform's own frames are never matched.
func (c *compiled) frameRE() *regexp.Regexp {
	c.reOnce.Do(func() {
		names := slices.Sorted(maps.Keys(c.sources))
		// Longest first, so that one name that ends another is not taken for it.
		slices.SortStableFunc(names, func(a, b string) int { return len(b) - len(a) })
		for i, n := range names {
			names[i] = regexp.QuoteMeta(n)
		}
		c.re = regexp.MustCompile(`(?:^|[\s(])(` + strings.Join(names, "|") + `):(\d+):(\d+)`)
	})
	return c.re
}

// sourceNames are the file names goja gives the frames of a module called name whose
// transformed code is code: the sources its inline source map names, resolved as goja
// resolves them (see file.ResolveSourcemapURL), and name itself.
func sourceNames(name, code string) map[string]bool {
	names := map[string]bool{name: true}
	i := strings.LastIndex(code, sourceMapPrefix)
	if i < 0 {
		return names
	}
	data := code[i+len(sourceMapPrefix):]
	if j := strings.IndexAny(data, "\n\r"); j >= 0 {
		data = data[:j]
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(data))
	if err != nil {
		return names
	}
	var m struct {
		Sources []string `json:"sources"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return names
	}
	for _, s := range m.Sources {
		if u := file.ResolveSourcemapURL(name, s); u != nil {
			s = u.String()
		}
		names[s] = true
	}
	return names
}

// fileName is the file a frame names: goja gives a source map's sources as URLs, with
// characters such as spaces escaped.
func fileName(frame string) string {
	if name, err := url.PathUnescape(frame); err == nil {
		return name
	}
	return frame
}

// sourceMapPrefix starts the inline source map esbuild writes.
const sourceMapPrefix = "//# sourceMappingURL=data:application/json;base64,"
