package ledger

import (
	"context"
	"sync"
)

// EventToolCalled: a run's phase called a tool that reads ({phase, tool, input,
// result?, error?}), recorded when the runtime records calls (runtime.Config
// RecordCalls) so that the run can be replayed. Input and result are stored as the
// host redacted them. A mutation's call is the mutation itself and is not logged here.
const EventToolCalled EventType = "tool_called"

// CallLog holds the tool_called events of one run until its next write: a read
// changes nothing in the ledger, so its event waits for the write that follows it
// (the store takes it with EventsFrom). A CallLog is safe for concurrent use.
type CallLog struct {
	mu      sync.Mutex
	pending []LifecycleEvent
}

type callLogKey struct{}

// WithCallLog returns ctx carrying a fresh CallLog for the run driven with it.
func WithCallLog(ctx context.Context) context.Context {
	return context.WithValue(ctx, callLogKey{}, &CallLog{})
}

// NoteCall adds ev to the CallLog of ctx; without one it does nothing.
func NoteCall(ctx context.Context, ev LifecycleEvent) {
	l, _ := ctx.Value(callLogKey{}).(*CallLog)
	if l == nil {
		return
	}
	l.mu.Lock()
	l.pending = append(l.pending, ev)
	l.mu.Unlock()
}

// takeCalls removes and returns the events the CallLog of ctx holds.
func takeCalls(ctx context.Context) []LifecycleEvent {
	l, _ := ctx.Value(callLogKey{}).(*CallLog)
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.pending
	l.pending = nil
	return evs
}
