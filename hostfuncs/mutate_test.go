package hostfuncs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// TestInFlightBeforeExecute: the tool itself opens the ledger file through a separate
// store and finds its own mutation in_flight under the key its context carries.
func TestInFlightBeforeExecute(t *testing.T) {
	s, path := openStore(t)
	ctx := context.Background()
	r := mutatingRun(t, s)
	var seen scripthost.Mutation
	var checked atomic.Bool
	tool := &hostfuncs.Tool{Namespace: "Bank", Method: "pay",
		Execute: func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
			other, err := sqlite.Open(ctx, path, sqlite.Options{})
			if err != nil {
				return nil, fmt.Errorf("open second store: %w", err)
			}
			defer other.Close()
			m, err := other.RunMutation(ctx, r.ID)
			if err != nil {
				return nil, fmt.Errorf("read own mutation: %w", err)
			}
			seen = m
			if m.Status != scripthost.MutationInFlight || m.IdempotencyKey != hostfuncs.IdempotencyKey(ctx) || hostfuncs.IdempotencyKey(ctx) == "" {
				return nil, scripthost.LogicError("found %s with key %q, context key %q", m.Status, m.IdempotencyKey, hostfuncs.IdempotencyKey(ctx))
			}
			checked.Store(true)
			return json.RawMessage(`{"paid":true}`), nil
		}}
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, tool)
	w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseMutate)
	out, err := w.Call(ctx, "Bank", "pay", json.RawMessage(`{"amount": 5, "to": "bob"}`))
	if err != nil {
		t.Fatalf("Call: %v (tool saw %+v)", err, seen)
	}
	if !checked.Load() {
		t.Fatalf("the tool did not find its mutation in flight")
	}
	if string(out) != `{"paid":true}` {
		t.Errorf("got result %s, want {\"paid\":true}", out)
	}
	m, err := s.RunMutation(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != scripthost.MutationApplied || m.ID != seen.ID || string(m.Params) != `{"amount":5,"to":"bob"}` {
		t.Errorf("got %s %s params %s, want %s applied with canonical params", m.ID, m.Status, m.Params, seen.ID)
	}
	run, _ := s.Run(ctx, r.ID)
	if run.Phase != scripthost.RunEmitting {
		t.Errorf("run phase: got %s, want emitting (on through mutated with the outcome)", run.Phase)
	}
}

// TestBeginFailsNothingCalled: when the in-flight row cannot be written the tool is not
// called.
func TestBeginFailsNothingCalled(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	tool := &hostfuncs.Tool{Namespace: "Bank", Method: "pay",
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			return nil, nil
		}}
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, tool)
	w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{}) // run is pending: BeginMutation refuses
	w.SetPhase(scripthost.PhaseMutate)
	_, err = w.Call(ctx, "Bank", "pay", json.RawMessage(`{}`))
	if err == nil || !isTerminate(err) || errCode(err) != hostfuncs.CodeLedger {
		t.Errorf("got %v, want a terminating ledger error", err)
	}
	if calls.Load() != 0 {
		t.Errorf("got %d tool calls, want 0", calls.Load())
	}
}

var chargeSchema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"amount": {"type": "integer", "minimum": 1},
		"currency": {"enum": ["usd", "eur"]},
		"card": {"type": "object", "properties": {"number": {"type": "string", "pattern": "^[0-9]{16}$"}}}
	},
	"required": ["amount", "currency"],
	"additionalProperties": false
}`)

func TestInputValidation(t *testing.T) {
	s, _ := openStore(t)
	var calls atomic.Int32
	tool := &hostfuncs.Tool{Namespace: "Pay", Method: "charge", InputSchema: chargeSchema,
		Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			return nil, nil
		}}
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, tool)
	tests := []struct {
		name  string
		phase scripthost.Phase
		input string
		want  []string
	}{
		{"every violation with its pointer", scripthost.PhaseMutate, `{"amount":"5","card":{"number":"12"},"extra":1}`,
			[]string{"(root): missing property 'currency'", "/amount: got string, want integer", "/card/number: '12' does not match pattern", "additional properties 'extra' not allowed"}},
		{"minimum", scripthost.PhaseMutate, `{"amount":0,"currency":"gbp"}`, []string{"/amount: minimum", "/currency: value must be one of"}},
		{"not an object", scripthost.PhaseMutate, `[1]`, []string{"(root): got array, want object"}},
		{"empty input is null", scripthost.PhaseMutate, ``, []string{"(root): got null, want object"}},
		{"invalid JSON", scripthost.PhaseMutate, `{"amount":`, []string{"input is not valid JSON"}},
		{"validated before the phase check", scripthost.PhaseNone, `{"amount":1}`, []string{"missing property 'currency'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := wrapperFor(reg, s, nil, hostfuncs.WrapperOptions{})
			w.SetPhase(tt.phase)
			_, err := w.Call(context.Background(), "Pay", "charge", json.RawMessage(tt.input))
			if errCode(err) != scripthost.CodeInvalidInput || !scripthost.IsLogic(err) {
				t.Fatalf("got %v (code %q), want logic error invalid_input", err, errCode(err))
			}
			for _, w := range tt.want {
				if !contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err.Error(), w)
				}
			}
			if isTerminate(err) {
				t.Errorf("an invalid input ended the invocation, want a catchable error")
			}
		})
	}
	if calls.Load() != 0 {
		t.Errorf("got %d calls, want 0", calls.Load())
	}
	if ms, _ := s.Mutations(context.Background(), ledger.MutationFilter{}); len(ms) != 0 {
		t.Errorf("got %d mutations recorded, want 0", len(ms))
	}
}

func TestBadToolSchema(t *testing.T) {
	reg := hostfuncs.NewRegistry()
	bad := okTool("T", "bad", scripthost.OpRead)
	bad.InputSchema = json.RawMessage(`{"type": 12}`)
	mustRegister(t, reg, bad)
	w := wrapperFor(reg, nil, nil, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhasePrepare)
	_, err := w.Call(context.Background(), "T", "bad", json.RawMessage(`{}`))
	if !scripthost.IsInternal(err) || errCode(err) != hostfuncs.CodeInvalidSchema {
		t.Errorf("got %v, want internal invalid_schema", err)
	}
	if err := hostfuncs.CompileSchema(bad.InputSchema); err == nil {
		t.Errorf("CompileSchema: got nil, want an error")
	}
}

func TestPanickingTool(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	panicky := func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("boom") }
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg,
		&hostfuncs.Tool{Namespace: "P", Method: "read", ReadOnly: hostfuncs.ReadOnlyAlways, Execute: panicky},
		&hostfuncs.Tool{Namespace: "P", Method: "write", Execute: panicky},
		&hostfuncs.Tool{Namespace: "P", Method: "classify", Execute: panicky,
			ReadOnly: func(json.RawMessage) bool { panic("predicate") }})

	w := wrapperFor(reg, s, nil, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhasePrepare)
	_, err := w.Call(ctx, "P", "read", nil)
	if !scripthost.IsInternal(err) || errCode(err) != scripthost.CodeToolPanic || !contains(err.Error(), "boom") {
		t.Errorf("read: got %v, want internal tool_panic naming the panic", err)
	}
	// A panicking predicate classifies the call as a mutation, refused in prepare.
	_, err = w.Call(ctx, "P", "classify", nil)
	if errCode(err) != scripthost.CodePhaseViolation {
		t.Errorf("classify: got %v, want phase_violation for a mutation", err)
	}

	r := mutatingRun(t, s)
	w = wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseMutate)
	_, err = w.Call(ctx, "P", "write", json.RawMessage(`{}`))
	if !isTerminate(err) || errCode(err) != scripthost.CodeUncertain {
		t.Errorf("write: got %v, want a terminating uncertain_outcome", err)
	}
	m, _ := s.RunMutation(ctx, r.ID)
	if m.Status != scripthost.MutationIndeterminate {
		t.Errorf("got mutation %s, want indeterminate (a panic leaves the outcome unknown, no reconciler)", m.Status)
	}
}

// TestMutationOutcomes drives Go tools through every outcome class, with and without a
// reconciler.
func TestMutationOutcomes(t *testing.T) {
	netErr := scripthost.Errorf(scripthost.ClassNetwork, "", "connection reset")
	applied := func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: json.RawMessage(`{"from":"reconcile"}`)}, nil
	}
	failed := func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "no such charge"}, nil
	}
	later := func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "busy"}, nil
	}
	erring := func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
		return scripthost.Reconciliation{}, errors.New("lookup down")
	}
	panicking := func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) { panic("reconcile boom") }
	type recFn = func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error)
	tests := []struct {
		name       string
		err        error
		reconcile  recFn
		wantStatus scripthost.MutationStatus
		wantResult string // "" when the call must end the invocation
		wantClass  scripthost.ErrorClass
	}{
		{"success", nil, nil, scripthost.MutationApplied, `{"done":1}`, ""},
		{"logic failure", scripthost.LogicError("card declined"), applied, scripthost.MutationFailed, "", scripthost.ClassLogic},
		{"auth failure", scripthost.Errorf(scripthost.ClassAuth, "", "bad key"), applied, scripthost.MutationFailed, "", scripthost.ClassAuth},
		{"permission failure", scripthost.Errorf(scripthost.ClassPermission, "", "no"), nil, scripthost.MutationFailed, "", scripthost.ClassPermission},
		{"network, no reconciler", netErr, nil, scripthost.MutationIndeterminate, "", scripthost.ClassNetwork},
		{"plain error, no reconciler", errors.New("eof"), nil, scripthost.MutationIndeterminate, "", scripthost.ClassInternal},
		{"deadline, reconciled applied", context.DeadlineExceeded, applied, scripthost.MutationApplied, `{"from":"reconcile"}`, ""},
		{"network, reconciled failed", netErr, failed, scripthost.MutationFailed, "", scripthost.ClassLogic},
		{"network, retry later", netErr, later, scripthost.MutationNeedsReconcile, "", scripthost.ClassNetwork},
		{"network, reconcile errors", netErr, erring, scripthost.MutationNeedsReconcile, "", scripthost.ClassNetwork},
		{"network, reconcile panics", netErr, panicking, scripthost.MutationNeedsReconcile, "", scripthost.ClassNetwork},
	}
	s, _ := openStore(t)
	ctx := context.Background()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := hostfuncs.NewRegistry()
			mustRegister(t, reg, &hostfuncs.Tool{Namespace: "Svc", Method: fmt.Sprintf("m%d", i), Reconcile: tt.reconcile,
				Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					if tt.err != nil {
						return nil, tt.err
					}
					return json.RawMessage(`{"done":1}`), nil
				}})
			r := mutatingRun(t, s)
			w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
			w.SetPhase(scripthost.PhaseMutate)
			out, err := w.Call(ctx, "Svc", fmt.Sprintf("m%d", i), json.RawMessage(`{}`))
			if tt.wantResult != "" {
				if err != nil || string(out) != tt.wantResult {
					t.Errorf("got %s, %v; want %s", out, err, tt.wantResult)
				}
			} else {
				if !isTerminate(err) {
					t.Errorf("got %v, want a terminating error", err)
				}
				if got := scripthost.ClassOf(err); got != tt.wantClass {
					t.Errorf("got class %s, want %s", got, tt.wantClass)
				}
			}
			m, err := s.RunMutation(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != tt.wantStatus {
				t.Errorf("got status %s, want %s", m.Status, tt.wantStatus)
			}
			if wm, ok := w.Mutation(); !ok || wm.Status != m.Status {
				t.Errorf("Mutation(): got %v %s, want %s", ok, wm.Status, m.Status)
			}
			if m.Status == scripthost.MutationNeedsReconcile {
				if m.ReconcileAttempts != 1 || !m.NextReconcileAt.Equal(testNow.Add(time.Second)) {
					t.Errorf("got attempts %d next %v, want 1 and now+1s", m.ReconcileAttempts, m.NextReconcileAt)
				}
			}
		})
	}
}

// TestUncertainWithRetryAfter: a service that answered an uncertain mutation with
// Retry-After is first asked again after that wait, not at once; without a reconciler
// the mutation still goes to a person.
func TestUncertainWithRetryAfter(t *testing.T) {
	busy := &scripthost.Error{Class: scripthost.ClassNetwork, Message: "HTTP 429 (retry after 1h0m0s)",
		Err: &hostfuncs.RetryAfterError{Wait: time.Hour}}
	s, _ := openStore(t)
	ctx := context.Background()
	for _, withReconciler := range []bool{true, false} {
		calls := 0
		tool := &hostfuncs.Tool{Namespace: "Svc", Method: "busy",
			Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, busy }}
		want := scripthost.MutationIndeterminate
		if withReconciler {
			tool.Reconcile = func(context.Context, scripthost.Mutation) (scripthost.Reconciliation, error) {
				calls++
				return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied}, nil
			}
			want = scripthost.MutationNeedsReconcile
		}
		reg := hostfuncs.NewRegistry()
		mustRegister(t, reg, tool)
		r := mutatingRun(t, s)
		w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
		w.SetPhase(scripthost.PhaseMutate)
		if _, err := w.Call(ctx, "Svc", "busy", json.RawMessage(`{}`)); !isTerminate(err) || !scripthost.IsNetwork(err) {
			t.Errorf("got %v, want a terminating network error", err)
		}
		m, err := s.RunMutation(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != want || calls != 0 {
			t.Errorf("reconciler %v: got %s after %d reconcile calls, want %s and none", withReconciler, m.Status, calls, want)
		}
		if withReconciler && (m.ReconcileAttempts != 0 || !m.NextReconcileAt.Equal(testNow.Add(time.Hour)) || !contains(m.Error, "first reconcile after 1h0m0s")) {
			t.Errorf("got attempts %d next %v (%q), want 0 and now+1h", m.ReconcileAttempts, m.NextReconcileAt, m.Error)
		}
	}
}

// failureCounts counts the calls of FailureCount.
type failureCounts struct {
	ledger.Store
	n atomic.Int32
}

func (s *failureCounts) FailureCount(ctx context.Context, hash string) (int, error) {
	s.n.Add(1)
	return s.Store.FailureCount(ctx, hash)
}

// TestKeyChangesAfterFailure: the same logical mutation keeps its key while its outcome
// is unknown and gets a new one after a definite failure. The failures are counted in
// the in-flight record's transaction: nothing is read before it.
func TestKeyChangesAfterFailure(t *testing.T) {
	st, _ := openStore(t)
	s := &failureCounts{Store: st}
	ctx := context.Background()
	var keys []string
	fail := true
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, &hostfuncs.Tool{Namespace: "Svc", Method: "do",
		Execute: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			keys = append(keys, hostfuncs.IdempotencyKey(ctx))
			if fail {
				return nil, scripthost.LogicError("declined")
			}
			return json.RawMessage(`1`), nil
		}})
	call := func() {
		w := wrapperFor(reg, s, nil, hostfuncs.WrapperOptions{}) // same scope each time
		w.SetPhase(scripthost.PhaseMutate)
		w.Call(ctx, "Svc", "do", json.RawMessage(`{"b":1,"a":2}`))
	}
	call()
	fail = false
	call()
	if len(keys) != 2 || keys[0] == keys[1] || keys[0] == "" {
		t.Fatalf("got keys %v, want two different keys", keys)
	}
	ms, _ := s.Mutations(ctx, ledger.MutationFilter{})
	if len(ms) != 2 || ms[0].InputHash != ms[1].InputHash {
		t.Fatalf("got %d mutations, want 2 with one input hash", len(ms))
	}
	for i, m := range ms {
		if want := scripthost.IdempotencyKey(m.InputHash, i); m.IdempotencyKey != want || keys[i] != want {
			t.Errorf("mutation %d: got key %s, called with %s, want %s (%d earlier failures)", i+1, m.IdempotencyKey, keys[i], want, i)
		}
	}
	if n := s.n.Load(); n != 0 {
		t.Errorf("got %d failure counts read before the in-flight record, want 0", n)
	}
}

func TestOutputSchema(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg,
		&hostfuncs.Tool{Namespace: "Svc", Method: "write", OutputSchema: json.RawMessage(`{"type":"object","required":["id"]}`),
			Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"no":1}`), nil
			}},
		&hostfuncs.Tool{Namespace: "Svc", Method: "text", ReadOnly: hostfuncs.ReadOnlyAlways,
			Execute: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`plain text`), nil
			}})
	r := mutatingRun(t, s)
	w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseMutate)
	_, err := w.Call(ctx, "Svc", "write", nil)
	if errCode(err) != hostfuncs.CodeInvalidOutput || !scripthost.IsLogic(err) || !contains(err.Error(), "missing property 'id'") {
		t.Errorf("got %v, want logic invalid_output naming the violation", err)
	}
	if m, _ := s.RunMutation(ctx, r.ID); m.Status != scripthost.MutationApplied {
		t.Errorf("got %s, want applied: the mutation happened", m.Status)
	}
	w.SetPhase(scripthost.PhasePrepare)
	out, err := w.Call(ctx, "Svc", "text", nil)
	if err != nil || string(out) != `"plain text"` {
		t.Errorf("got %s, %v; want the text as a JSON string", out, err)
	}
}

func TestMutationWithoutStore(t *testing.T) {
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, okTool("Svc", "do", ""))
	w := hostfuncs.NewToolWrapper(reg, nil, hostfuncs.RunInfo{Workflow: "wf"}, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseMutate)
	if _, err := w.Call(context.Background(), "Svc", "do", nil); !isTerminate(err) || errCode(err) != hostfuncs.CodeLedger {
		t.Errorf("got %v, want a terminating ledger error", err)
	}
}

// TestInputHashOfTheRealInput checks that a mutation's input hash is taken of its
// canonical input with its secrets, while its stored params have them redacted: two
// calls that differ only in a secret are two mutations, and the tool gets the input
// as the script sent it.
func TestInputHashOfTheRealInput(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	reg := hostfuncs.NewRegistry()
	var got []string
	mustRegister(t, reg, &hostfuncs.Tool{Namespace: "Svc", Method: "login", SecretFields: []string{"pin"},
		Execute: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			got = append(got, string(in))
			return json.RawMessage(`1`), nil
		}})
	inputs := []string{`{"user":"a","password":"p1","pin":"0001","n":1.50}`, `{"user":"a","password":"p2","pin":"0001","n":1.50}`}
	for _, in := range inputs {
		w := wrapperFor(reg, s, nil, hostfuncs.WrapperOptions{})
		w.SetPhase(scripthost.PhaseMutate)
		if _, err := w.Call(ctx, "Svc", "login", json.RawMessage(in)); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, inputs) {
		t.Errorf("the tool got %q, want %q", got, inputs)
	}
	ms, err := s.Mutations(ctx, ledger.MutationFilter{})
	if err != nil || len(ms) != 2 {
		t.Fatalf("got %d mutations (%v), want 2", len(ms), err)
	}
	for i, m := range ms {
		canonical, err := scripthost.CanonicalJSON([]byte(inputs[i]))
		if err != nil {
			t.Fatal(err)
		}
		want := scripthost.InputHash(scripthost.KeyInput{Workflow: "wf", Handler: "h", Namespace: "Svc", Method: "login",
			Params: canonical, Scope: "test-scope"})
		if m.InputHash != want {
			t.Errorf("mutation %d: input hash %s, want %s (of %s)", i+1, m.InputHash, want, canonical)
		}
		if wantParams := `{"n":1.50,"password":"[REDACTED]","pin":"[REDACTED]","user":"a"}`; string(m.Params) != wantParams {
			t.Errorf("mutation %d: params %s, want %s", i+1, m.Params, wantParams)
		}
	}
	if ms[0].InputHash == ms[1].InputHash {
		t.Errorf("two inputs that differ in a secret have one input hash")
	}
}
