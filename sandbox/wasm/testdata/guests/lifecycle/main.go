//go:build wasip1

// Command lifecycle is the Go guest of the phase lifecycle test that runs through the
// runtime (lifecycle_test.go): the same handlers as the runtime's JavaScript tests
// (onRetry, a failure sent on to next, an after hook failing in the mutate phase, a
// guard that does not return a boolean, __state__ in every phase). The tests build
// it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o lifecycle.wasm .
package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/scripthost/scripthost/sandbox/wasm/guest"
)

func init() {
	guest.Define(guest.Workflow{
		Topics: []string{"r", "n", "a", "g", "failed"},
		Consumers: map[string]guest.Consumer{
			"retry": {
				Subscribe: []string{"r"}, Prepare: "retry_prepare", Mutate: "apply_mutate",
				OnError: &guest.OnError{Strategy: "retry", MaxRetries: 3, DelayMS: 1000, OnRetry: "retry_on_retry"},
			},
			"tonext": {
				Subscribe: []string{"n"}, Publishes: []string{"failed"},
				Prepare: "reserve_n", Mutate: "charge_mutate", Next: "tonext_next",
				OnMutationFailure: &guest.MutationFailure{Strategy: "next"},
			},
			"after": {
				Subscribe: []string{"a"}, Prepare: "reserve_a", Mutate: "apply_mutate", Next: "after_next",
				After:   "after_hook",
				OnError: &guest.OnError{Strategy: "retry", MaxRetries: 1},
			},
			"guard":  {Subscribe: []string{"g"}, Prepare: "reserve_g", Guard: "guard_yes"},
			"failed": {Subscribe: []string{"failed"}, Prepare: "nothing"},
		},
	})
}

func main() {}

type retryState struct {
	Tries int    `json:"tries"`
	Last  string `json:"last"`
}

//go:wasmexport retry_on_retry
func retryOnRetry() {
	guest.Handle(func() (any, error) {
		var cause guest.RetryError
		if err := guest.Arg(0, &cause); err != nil {
			return nil, err
		}
		var st retryState
		if err := guest.Arg(1, &st); err != nil {
			return nil, err
		}
		return retryState{Tries: st.Tries + 1, Last: cause.Message}, nil
	})
}

//go:wasmexport retry_prepare
func retryPrepare() {
	guest.Handle(func() (any, error) {
		var st retryState
		if err := guest.State(&st); err != nil && !errors.Is(err, guest.ErrUndefined) {
			return nil, err
		}
		if st.Tries < 2 {
			return nil, errors.New("not yet")
		}
		return reserve("r", st.Tries)
	})
}

func reserve(topic string, data any) (any, error) {
	evs, err := guest.Peek(topic, 1)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return map[string]any{"reservations": []any{map[string]any{"topic": topic, "ids": []string{evs[0].ID}}}, "data": data}, nil
}

//go:wasmexport reserve_n
func reserveN() { guest.Handle(func() (any, error) { return reserve("n", "n") }) }

//go:wasmexport reserve_a
func reserveA() { guest.Handle(func() (any, error) { return reserve("a", "a") }) }

//go:wasmexport reserve_g
func reserveG() { guest.Handle(func() (any, error) { return reserve("g", "g") }) }

//go:wasmexport nothing
func nothing() { guest.Handle(func() (any, error) { return nil, nil }) }

//go:wasmexport apply_mutate
func applyMutate() {
	guest.Handle(func() (any, error) {
		var data json.RawMessage
		if err := guest.Arg(0, &data); err != nil {
			return nil, err
		}
		return nil, guest.Call("Svc", "apply", map[string]any{"value": data}, nil)
	})
}

//go:wasmexport charge_mutate
func chargeMutate() {
	guest.Handle(func() (any, error) {
		state, _, _ := guest.Raw()
		guest.Log("mutate state ", string(state))
		return nil, guest.Call("Pay", "charge", map[string]any{"amount": 1}, nil)
	})
}

//go:wasmexport tonext_next
func tonextNext() {
	guest.Handle(func() (any, error) {
		var out guest.Outcome
		if err := guest.MutationResult(&out); err != nil {
			return nil, err
		}
		state, prepared, _ := guest.Raw()
		guest.Log("next state ", string(state), " prepared ", string(prepared))
		if out.Status != "failed" || out.Error == nil {
			return nil, fmt.Errorf("want a failed outcome, got %+v", out)
		}
		guest.Log("next ", out.Status, " ", out.Error.Class, " ", out.Error.Code, " ", out.Error.Message)
		return map[string]int{"handled": 1}, guest.Publish("failed", "n", out.Error)
	})
}

//go:wasmexport after_hook
func afterHook() {
	guest.Handle(func() (any, error) {
		var info struct {
			Phase   string `json:"phase"`
			Attempt int    `json:"attempt"`
		}
		if err := guest.Arg(0, &info); err != nil {
			return nil, err
		}
		if info.Phase == "mutate" && info.Attempt == 1 {
			return nil, errors.New("audit log is down")
		}
		return nil, nil
	})
}

//go:wasmexport after_next
func afterNext() {
	guest.Handle(func() (any, error) {
		var out guest.Outcome
		if err := guest.MutationResult(&out); err != nil {
			return nil, err
		}
		guest.Log("after next ", out.Status)
		return nil, nil
	})
}

//go:wasmexport guard_yes
func guardYes() { guest.Handle(func() (any, error) { return "yes", nil }) }
