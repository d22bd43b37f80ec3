package sandbox

import "context"

type callSiteKey struct{}

// CallSiteFunc returns where in the script the tool call running now was made.
type CallSiteFunc func() (file string, line, column int, ok bool)

// WithCallSite gives a tool call's context the engine's way to find where in the script
// the call was made. Engines that can tell set it on every call; it is asked only
// while the call runs, on the call's goroutine.
func WithCallSite(ctx context.Context, f CallSiteFunc) context.Context {
	return context.WithValue(ctx, callSiteKey{}, f)
}

// CallSite returns the script's file, line and column (1-based) of the tool call
// running with ctx, when its engine can tell.
func CallSite(ctx context.Context) (file string, line, column int, ok bool) {
	f, _ := ctx.Value(callSiteKey{}).(CallSiteFunc)
	if f == nil {
		return "", 0, 0, false
	}
	return f()
}
