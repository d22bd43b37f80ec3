package hostfuncs

import (
	"context"
	"encoding/json"
	"testing"
)

// TestRegisterAllOrNothing: a call that registers an invalid tool registers none of
// the tools before it, and a name repeated within one call is refused.
func TestRegisterAllOrNothing(t *testing.T) {
	exec := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	ok := func(ns, m string) *Tool { return &Tool{Namespace: ns, Method: m, Execute: exec} }
	for _, tc := range []struct {
		name  string
		tools []*Tool
	}{
		{"invalid name", []*Tool{ok("A", "one"), ok("A", "two"), ok("A", "bad-name")}},
		{"no Execute", []*Tool{ok("A", "one"), {Namespace: "A", Method: "two"}}},
		{"nil tool", []*Tool{ok("A", "one"), nil}},
		{"repeated in the call", []*Tool{ok("A", "one"), ok("A", "one")}},
		{"already registered", []*Tool{ok("A", "one"), ok("B", "taken")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			if err := r.Register(ok("B", "taken")); err != nil {
				t.Fatal(err)
			}
			if err := r.Register(tc.tools...); err == nil {
				t.Fatal("got no error, want the call refused")
			}
			if got := len(r.Tools()); got != 1 {
				t.Errorf("got %d tools registered, want only the 1 from before", got)
			}
			if _, found := r.Lookup("A", "one"); found {
				t.Error("A.one was registered by a refused call")
			}
		})
	}
}
