package hostfuncs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// TestAllowMatrix calls one tool of every operation in every phase, including none.
// The expected table is written out here rather than taken from scripthost.Allowed so
// that a change to either is caught.
func TestAllowMatrix(t *testing.T) {
	s, _ := openStore(t)
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg,
		okTool("T", "read", scripthost.OpRead),
		okTool("T", "mutate", ""),
		okTool("T", "peek", scripthost.OpTopicPeek),
		okTool("T", "publish", scripthost.OpTopicPublish))
	methods := map[scripthost.Operation]string{
		scripthost.OpRead: "read", scripthost.OpMutate: "mutate",
		scripthost.OpTopicPeek: "peek", scripthost.OpTopicPublish: "publish",
	}
	want := map[scripthost.Phase]map[scripthost.Operation]bool{
		scripthost.PhaseNone:     {},
		scripthost.PhaseProducer: {scripthost.OpRead: true, scripthost.OpTopicPublish: true},
		scripthost.PhasePrepare:  {scripthost.OpRead: true, scripthost.OpTopicPeek: true},
		scripthost.PhaseMutate:   {scripthost.OpMutate: true},
		scripthost.PhaseNext:     {scripthost.OpTopicPublish: true},
		scripthost.PhaseHook:     {scripthost.OpRead: true},
	}
	for phase, row := range want {
		for op, method := range methods {
			t.Run(fmt.Sprintf("%s/%s", phase, op), func(t *testing.T) {
				r := mutatingRun(t, s)
				w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
				w.SetPhase(phase)
				if got := w.Phase(); got != phase {
					t.Fatalf("Phase(): got %q, want %q", got, phase)
				}
				_, err := w.Call(context.Background(), "T", method, json.RawMessage(`{}`))
				checkErr := w.CheckPhaseAllowed(op)
				if row[op] {
					if err != nil {
						t.Fatalf("got error %v, want the call allowed", err)
					}
					if op != scripthost.OpMutate && checkErr != nil {
						t.Errorf("CheckPhaseAllowed: got %v, want nil", checkErr)
					}
					return
				}
				if err == nil {
					t.Fatalf("got no error, want %s refused in %s", op, phase)
				}
				if !scripthost.IsLogic(err) || errCode(err) != scripthost.CodePhaseViolation {
					t.Errorf("got %v (code %q), want a logic error with code phase_violation", err, errCode(err))
				}
				msg := fmt.Sprintf("Operation '%s' not allowed in '%s' phase", op, phase)
				if phase == scripthost.PhaseNone {
					msg = fmt.Sprintf("Operation '%s' not allowed outside handler execution", op)
				}
				if !contains(err.Error(), msg) || !contains(err.Error(), "T."+method) {
					t.Errorf("got message %q, want it to contain %q and the tool name", err.Error(), msg)
				}
				if checkErr == nil {
					t.Errorf("CheckPhaseAllowed: got nil, want a refusal")
				}
				if isTerminate(err) {
					t.Errorf("got a terminating error before any mutation, want a catchable one")
				}
				if _, ok := w.Mutation(); ok {
					t.Errorf("a refused call recorded a mutation")
				}
			})
		}
	}
}

func TestNamedPhaseCases(t *testing.T) {
	s, _ := openStore(t)
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, okTool("Mail", "read", scripthost.OpRead), okTool("Mail", "send", ""))
	peek := json.RawMessage(`{"topic":"in"}`)
	publish := json.RawMessage(`{"topic":"out","payload":1}`)
	tests := []struct {
		name           string
		phase          scripthost.Phase
		ns, method     string
		input          json.RawMessage
		wantCode, want string
	}{
		{"mutation in prepare", scripthost.PhasePrepare, "Mail", "send", nil, scripthost.CodePhaseViolation, "Operation 'mutate' not allowed in 'prepare' phase"},
		{"read in mutate", scripthost.PhaseMutate, "Mail", "read", nil, scripthost.CodePhaseViolation, "Operation 'read' not allowed in 'mutate' phase"},
		{"peek in producer", scripthost.PhaseProducer, "Topics", "peek", peek, scripthost.CodePhaseViolation, "Operation 'topic_peek' not allowed in 'producer' phase"},
		{"publish in prepare", scripthost.PhasePrepare, "Topics", "publish", publish, scripthost.CodePhaseViolation, "Operation 'topic_publish' not allowed in 'prepare' phase"},
		{"publish in mutate", scripthost.PhaseMutate, "Topics", "publish", publish, scripthost.CodePhaseViolation, "Operation 'topic_publish' not allowed in 'mutate' phase"},
		{"no phase read", scripthost.PhaseNone, "Mail", "read", nil, scripthost.CodePhaseViolation, "Operation 'read' not allowed outside handler execution"},
		{"no phase mutate", scripthost.PhaseNone, "Mail", "send", nil, scripthost.CodePhaseViolation, "Operation 'mutate' not allowed outside handler execution"},
		{"no phase peek", scripthost.PhaseNone, "Topics", "peek", peek, scripthost.CodePhaseViolation, "Operation 'topic_peek' not allowed outside handler execution"},
		{"no phase publish", scripthost.PhaseNone, "Topics", "publish", publish, scripthost.CodePhaseViolation, "Operation 'topic_publish' not allowed outside handler execution"},
		{"unknown tool", scripthost.PhasePrepare, "Mail", "nope", nil, scripthost.CodeUnknownTool, "unknown tool Mail.nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mutatingRun(t, s)
			w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
			w.SetPhase(tt.phase)
			_, err := w.Call(context.Background(), tt.ns, tt.method, tt.input)
			if err == nil {
				t.Fatalf("got no error, want %q", tt.want)
			}
			if !scripthost.IsLogic(err) || errCode(err) != tt.wantCode {
				t.Errorf("got %v (code %q), want a logic error with code %s", err, errCode(err), tt.wantCode)
			}
			if !contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err.Error(), tt.want)
			}
		})
	}
}

func TestSecondMutationAndAfter(t *testing.T) {
	s, _ := openStore(t)
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, okTool("Mail", "read", scripthost.OpRead), okTool("Mail", "send", ""), okTool("Mail", "archive", ""))
	ctx := context.Background()
	r := mutatingRun(t, s)
	w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
	w.SetPhase(scripthost.PhaseMutate)
	if _, err := w.Call(ctx, "Mail", "send", json.RawMessage(`{"to":"a"}`)); err != nil {
		t.Fatalf("first mutation: %v", err)
	}
	if err := w.CheckPhaseAllowed(scripthost.OpMutate); errCode(err) != scripthost.CodeSecondMutation {
		t.Errorf("CheckPhaseAllowed after the mutation: got %v, want second_mutation", err)
	}
	tests := []struct {
		name, method string
		wantCode     string
	}{
		{"second mutation", "archive", scripthost.CodeSecondMutation},
		{"same tool again", "send", scripthost.CodeSecondMutation},
		{"read after mutation", "read", scripthost.CodePhaseViolation},
		{"unknown tool after mutation", "nope", scripthost.CodeUnknownTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.Call(ctx, "Mail", tt.method, json.RawMessage(`{"to":"b"}`))
			if errCode(err) != tt.wantCode || !scripthost.IsLogic(err) {
				t.Errorf("got %v (code %q), want logic error %s", err, errCode(err), tt.wantCode)
			}
			if tt.wantCode == scripthost.CodeSecondMutation && !contains(err.Error(), "Only one mutation allowed per mutate phase") {
				t.Errorf("got message %q, want the specification's wording", err.Error())
			}
			if !isTerminate(err) {
				t.Errorf("got a catchable error, want one that ends the invocation")
			}
		})
	}
	m, ok := w.Mutation()
	if !ok || m.Status != scripthost.MutationApplied || m.Tool() != "Mail.send" {
		t.Errorf("Mutation(): got %v %+v, want Mail.send applied", ok, m)
	}
	all, err := s.Mutations(ctx, ledgerFilter(r.ID))
	if err != nil || len(all) != 1 {
		t.Errorf("got %d mutations (%v), want 1", len(all), err)
	}
	// A new mutate phase admits one mutation again (on a fresh wrapper state).
	w.SetPhase(scripthost.PhaseMutate)
	if _, ok := w.Mutation(); ok {
		t.Errorf("SetPhase kept the previous mutation")
	}
	if err := w.CheckPhaseAllowed(scripthost.OpMutate); err != nil {
		t.Errorf("CheckPhaseAllowed after SetPhase: got %v, want nil", err)
	}
}

func TestList(t *testing.T) {
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, okTool("Mail", "send", ""), okTool("A", "b", scripthost.OpRead))
	w := hostfuncs.NewToolWrapper(reg, nil, hostfuncs.RunInfo{}, hostfuncs.WrapperOptions{})
	var got []string
	for _, n := range w.List() {
		got = append(got, n.Namespace+"."+n.Method)
	}
	want := "[A.b Mail.send Topics.peek Topics.publish]"
	if fmt.Sprint(got) != want {
		t.Errorf("got %v, want %s", got, want)
	}
	// Registering the built-ins does not list them twice.
	if err := hostfuncs.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	if n := len(w.List()); n != 4 {
		t.Errorf("after RegisterBuiltins: got %d tools, want 4", n)
	}
}
