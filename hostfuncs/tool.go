// Package hostfuncs owns what a script can reach outside its sandbox: the tool registry,
// the ToolWrapper that checks every call against the current phase and records
// mutations in the ledger before they happen, the built-in tools, and redaction of
// secrets.
package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// Tool is one host function a script can call as Namespace.method.
type Tool struct {
	Namespace   string
	Method      string
	Description string
	// InputSchema and OutputSchema are JSON Schemas; nil accepts anything.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	// Operation fixes the classification of every call (the topic tools use it). When
	// empty, ReadOnly decides between read and mutate.
	Operation scripthost.Operation
	// ReadOnly reports whether a call with this input only reads. Nil means every
	// call is a mutation.
	ReadOnly func(input json.RawMessage) bool
	// Execute performs the call. For a mutation, ctx carries the idempotency key
	// (IdempotencyKey(ctx)). Errors should be *scripthost.Error; any other error is
	// treated as internal, which leaves a mutation's outcome uncertain.
	Execute func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)
	// Reconcile, when set, asks the outside world what became of a mutation whose
	// outcome was uncertain.
	Reconcile func(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error)
	// SecretFields name input fields whose values are redacted wherever they are
	// stored or printed.
	SecretFields []string
	// Timeout is the longest one call may take (0: not known). A host sharing its
	// ledger refuses a mutating tool whose calls may outlast the lease TTL.
	Timeout time.Duration
	// Secrets are values the tool itself uses (API keys read from the environment)
	// that must never be logged, stored or shown. A ToolWrapper registers them with
	// its Redactor.
	Secrets []string
}

// Name returns "Namespace.method".
func (t *Tool) Name() string { return t.Namespace + "." + t.Method }

// Classify returns the operation of a call with this input.
func (t *Tool) Classify(input json.RawMessage) scripthost.Operation {
	if t.Operation != "" {
		return t.Operation
	}
	if t.ReadOnly != nil && t.ReadOnly(input) {
		return scripthost.OpRead
	}
	return scripthost.OpMutate
}

// ReadOnlyAlways is a ReadOnly predicate for tools that never mutate.
func ReadOnlyAlways(json.RawMessage) bool { return true }

type ctxKey struct{}

// WithIdempotencyKey returns ctx carrying key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, ctxKey{}, key)
}

// IdempotencyKey returns the key ctx carries, or "".
func IdempotencyKey(ctx context.Context) string {
	k, _ := ctx.Value(ctxKey{}).(string)
	return k
}

var identRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// Registry holds the tools a host offers. It is the whitelist: a name that is not
// registered cannot be called.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*Tool
	// sorted and names are the tools sorted by name and what a ToolWrapper lists,
	// built at the first use after a change: every run's wrappers ask for them.
	sorted []*Tool
	names  []sandbox.ToolName
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*Tool{}} }

// Register adds tools. A tool needs a namespace and a method that are identifiers, an
// Execute function, and a name not registered yet. It is all or nothing: when one
// tool is refused, none of them is added.
func (r *Registry) Register(tools ...*Tool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Every tool is checked before any is added: a failed call registers nothing.
	batch := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t == nil {
			return errors.New("hostfuncs: register: nil tool")
		}
		if !identRE.MatchString(t.Namespace) || !identRE.MatchString(t.Method) {
			return fmt.Errorf("hostfuncs: register %q: namespace and method must be identifiers", t.Name())
		}
		if t.Execute == nil {
			return fmt.Errorf("hostfuncs: register %s: no Execute function", t.Name())
		}
		if t.Operation != "" && !t.Operation.Valid() {
			return fmt.Errorf("hostfuncs: register %s: unknown operation %q", t.Name(), t.Operation)
		}
		if _, dup := r.tools[t.Name()]; dup || batch[t.Name()] {
			return fmt.Errorf("hostfuncs: register %s: already registered", t.Name())
		}
		batch[t.Name()] = true
	}
	for _, t := range tools {
		r.tools[t.Name()] = t
	}
	r.sorted, r.names = nil, nil
	return nil
}

// Lookup returns the tool registered as namespace.method.
func (r *Registry) Lookup(namespace, method string) (*Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[namespace+"."+method]
	return t, ok
}

// Redactor returns red, or a new Redactor when red is nil, with the secrets of every
// tool registered in r added: what each executor redacts from what it stores and shows.
func (r *Registry) Redactor(red *Redactor) *Redactor {
	if red == nil {
		red = NewRedactor()
	}
	tools, _ := r.snapshot()
	for _, t := range tools {
		red.AddSecret(t.Secrets...)
	}
	return red
}

// Tools returns every registered tool, sorted by name.
func (r *Registry) Tools() []*Tool {
	tools, _ := r.snapshot()
	return slices.Clone(tools)
}

// snapshot returns the registered tools sorted by name and the names a ToolWrapper
// lists (those plus the built-in topic tools), shared: callers must not change them.
func (r *Registry) snapshot() ([]*Tool, []sandbox.ToolName) {
	r.mu.RLock()
	tools, names := r.sorted, r.names
	r.mu.RUnlock()
	if names != nil {
		return tools, names
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names == nil {
		r.sorted = make([]*Tool, 0, len(r.tools))
		for _, t := range r.tools {
			r.sorted = append(r.sorted, t)
		}
		sort.Slice(r.sorted, func(i, j int) bool { return r.sorted[i].Name() < r.sorted[j].Name() })
		byName := map[string]sandbox.ToolName{}
		for _, t := range append(slices.Clone(r.sorted), TopicTools()...) {
			byName[t.Name()] = sandbox.ToolName{Namespace: t.Namespace, Method: t.Method}
		}
		r.names = make([]sandbox.ToolName, 0, len(byName))
		for _, n := range byName {
			r.names = append(r.names, n)
		}
		sort.Slice(r.names, func(i, j int) bool {
			return r.names[i].Namespace+"."+r.names[i].Method < r.names[j].Namespace+"."+r.names[j].Method
		})
	}
	return r.sorted, r.names
}
