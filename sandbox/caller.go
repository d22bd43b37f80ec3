package sandbox

import (
	"context"
	"fmt"
)

// Location is a place in a script: the file as the engine names it, and 1-based line
// and column. A zero Location is unknown.
type Location struct {
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// Known reports whether l names a line.
func (l Location) Known() bool { return l.Line > 0 }

// String is "file:line:col" (or "file:line"), or "" when unknown.
func (l Location) String() string {
	switch {
	case !l.Known():
		return ""
	case l.Column > 0:
		return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Column)
	}
	return fmt.Sprintf("%s:%d", l.File, l.Line)
}

type callerKey struct{}

// WithCaller returns ctx carrying where, which tells a tool call's receiver where in
// the script the call is being made. An engine passes it to Tools.Call. where is only
// valid during the call it is passed to, and must be called on the goroutine making
// it: it reads the script's stack as it is at that moment.
func WithCaller(ctx context.Context, where func() Location) context.Context {
	return context.WithValue(ctx, callerKey{}, where)
}

// Caller returns the script location of the tool call made with ctx, when its engine
// tells it.
func Caller(ctx context.Context) (Location, bool) {
	where, _ := ctx.Value(callerKey{}).(func() Location)
	if where == nil {
		return Location{}, false
	}
	l := where()
	return l, l.Known()
}
