package sandboxtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// ErrNetwork is what Fail.network returns: a network-class error with code
// "connection_reset".
var ErrNetwork = &scripthost.Error{
	Class:   scripthost.ClassNetwork,
	Code:    "connection_reset",
	Message: "sandboxtest: connection reset by peer",
}

// ErrTerminateCause is the cause Fail.terminate wraps with sandbox.Terminate.
var ErrTerminateCause = errors.New("sandboxtest: host is shutting down")

// Call is one tool call the suite's Tools received.
type Call struct {
	Namespace string
	Method    string
	Input     json.RawMessage
}

// Tools is the suite's in-memory sandbox.Tools. It offers:
//
//	Echo.say        returns its input
//	Fail.network    returns ErrNetwork
//	Fail.terminate  returns sandbox.Terminate(ErrTerminateCause)
//	Fail.panic      panics
//
// and records every call. It is safe for concurrent use.
type Tools struct {
	mu    sync.Mutex
	calls []Call
}

// NewTools returns an empty recorder.
func NewTools() *Tools { return &Tools{} }

// List implements sandbox.Tools.
func (t *Tools) List() []sandbox.ToolName {
	return []sandbox.ToolName{
		{Namespace: "Echo", Method: "say"},
		{Namespace: "Fail", Method: "network"},
		{Namespace: "Fail", Method: "terminate"},
		{Namespace: "Fail", Method: "panic"},
	}
}

// Call implements sandbox.Tools.
func (t *Tools) Call(ctx context.Context, namespace, method string, input json.RawMessage) (json.RawMessage, error) {
	t.mu.Lock()
	t.calls = append(t.calls, Call{Namespace: namespace, Method: method, Input: append(json.RawMessage(nil), input...)})
	t.mu.Unlock()
	switch namespace + "." + method {
	case "Echo.say":
		return input, nil
	case "Fail.network":
		return nil, ErrNetwork
	case "Fail.terminate":
		return nil, sandbox.Terminate(ErrTerminateCause)
	case "Fail.panic":
		panic("sandboxtest: tool panicked on purpose")
	}
	return nil, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeUnknownTool, "sandboxtest: unknown tool %s.%s", namespace, method)
}

// Calls returns a copy of the calls recorded so far.
func (t *Tools) Calls() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Call(nil), t.calls...)
}

// String describes the recorded calls, for failure messages.
func (t *Tools) String() string {
	calls := t.Calls()
	s := fmt.Sprintf("%d calls", len(calls))
	for i, c := range calls {
		if i == 5 {
			s += " …"
			break
		}
		s += fmt.Sprintf(" %s.%s(%s)", c.Namespace, c.Method, c.Input)
	}
	return s
}
