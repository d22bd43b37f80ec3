package guest

import (
	"encoding/json"
	"errors"
	"runtime/debug"
)

// MaxStack is the goroutine stack limit the SDK sets at start-up. Go's default of
// 1 GB is far above a guest's memory cap, so unbounded recursion would end as an
// out-of-memory abort after copying the stack many times; 8 MiB ends it early as a
// stack overflow the host reports as a stack limit. Call debug.SetMaxStack in an init
// function to change it.
const MaxStack = 8 << 20

func init() { debug.SetMaxStack(MaxStack) }

// Workflow is the definition a module declares: the same shape as a JS workflow's
// default export, with export names in place of functions.
type Workflow struct {
	Topics    []string            `json:"topics,omitempty"`
	Producers map[string]Producer `json:"producers,omitempty"`
	Consumers map[string]Consumer `json:"consumers,omitempty"`
}

// Producer runs on a schedule and may publish.
type Producer struct {
	Schedule  *Schedule `json:"schedule,omitempty"`
	Publishes []string  `json:"publishes,omitempty"`
	// Handler is the export name of the producer function; Guard, Before and After
	// are optional hooks.
	Handler string   `json:"handler"`
	Guard   string   `json:"guard,omitempty"`
	Before  string   `json:"before,omitempty"`
	After   string   `json:"after,omitempty"`
	OnError *OnError `json:"onError,omitempty"`
}

// Schedule says when a producer runs.
type Schedule struct {
	Every string `json:"every,omitempty"`
	Cron  string `json:"cron,omitempty"`
}

// Consumer handles events of the topics it subscribes to in three phases. The phase
// fields are export names; Guard, Before and After are optional hooks.
type Consumer struct {
	Subscribe []string `json:"subscribe"`
	Publishes []string `json:"publishes,omitempty"`
	Prepare   string   `json:"prepare"`
	Mutate    string   `json:"mutate,omitempty"`
	Next      string   `json:"next,omitempty"`
	Guard     string   `json:"guard,omitempty"`
	Before    string   `json:"before,omitempty"`
	After     string   `json:"after,omitempty"`
	OnError   *OnError `json:"onError,omitempty"`
	// OnMutationFailure, when set, says where a definite failure of the mutation
	// goes: to next (Strategy "next"), which sees it as an Outcome with status
	// "failed", instead of failing the run.
	OnMutationFailure *MutationFailure `json:"onMutationFailure,omitempty"`
}

// OnError is a handler's error policy: Strategy "fail" (the default), "retry" or
// "pause"; Backoff "fixed" (the default) or "exponential".
type OnError struct {
	Strategy   string `json:"strategy"`
	MaxRetries int    `json:"maxRetries,omitempty"`
	Backoff    string `json:"backoff,omitempty"`
	DelayMS    int    `json:"delayMs,omitempty"`
	// OnRetry is the export name of a function run before each retry, with no
	// tools: its arguments are the error ({class, code, message, attempt}) and the
	// state, and it returns the state the retry starts from (Return nothing to keep
	// it).
	OnRetry string `json:"onRetry,omitempty"`
}

// MutationFailure is a consumer's onMutationFailure: Strategy "fail" (the default) or
// "next"; with "next", Events "consume" (the default: consumed when the run commits)
// or "release" (given back at once).
type MutationFailure struct {
	Strategy string `json:"strategy"`
	Events   string `json:"events,omitempty"`
}

// Outcome is what next receives as __mutationResult__ (decode it with MutationResult):
// Status "applied" (with Result), "skipped", "failed" (with Error, when the consumer
// sends failures on to next) or "none".
type Outcome struct {
	Status string          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *OutcomeError   `json:"error,omitempty"`
}

// OutcomeError is a definite mutation failure as next sees it.
type OutcomeError struct {
	Class   string `json:"class"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// RetryError is the error onRetry receives as its first argument (decode it with Arg(0,
// …)).
type RetryError struct {
	Class   string `json:"class"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
	Attempt int    `json:"attempt"`
}

var declared any

// Define sets the definition scripthost_describe returns: a Workflow, or any value
// that encodes to the definition JSON (json.RawMessage for literal JSON). Call it from
// an init function.
func Define(def any) { declared = def }

func definition() (any, error) {
	if declared == nil {
		return nil, errors.New("guest: no workflow definition: call guest.Define from an init function")
	}
	if raw, ok := declared.(json.RawMessage); ok && !json.Valid(raw) {
		return nil, errors.New("guest: the definition is not valid JSON")
	}
	return declared, nil
}
