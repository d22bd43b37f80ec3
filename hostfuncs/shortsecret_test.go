package hostfuncs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// TestShortCallSecretRedacted: a secret field's value shorter than four characters,
// which the service echoes in its answer or its error, is kept out of the ledger and
// the script's error where it stands alone.
func TestShortCallSecretRedacted(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprint("fail=", fail), func(t *testing.T) {
			s, _ := openStore(t)
			reg := hostfuncs.NewRegistry()
			mustRegister(t, reg, &hostfuncs.Tool{Namespace: "Bank", Method: "verify", SecretFields: []string{"pin"},
				Execute: func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
					var v struct{ Pin string }
					json.Unmarshal(in, &v)
					if fail {
						return nil, scripthost.LogicError("pin %s rejected", v.Pin)
					}
					return json.RawMessage(`{"echo":"` + v.Pin + `","id":"v_42x"}`), nil
				}})
			r := mutatingRun(t, s)
			w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{})
			w.SetPhase(scripthost.PhaseMutate)
			out, err := w.Call(context.Background(), "Bank", "verify", json.RawMessage(`{"account":"acc_1","pin":"42"}`))
			m, gerr := s.RunMutation(context.Background(), r.ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			row, _ := json.Marshal(m)
			for what, text := range map[string]string{"result": string(out), "ledger row": string(row), "error": fmt.Sprint(err)} {
				if strings.Contains(text, `"42"`) || strings.Contains(text, "pin 42 ") {
					t.Errorf("%s holds the pin: %s", what, text)
				}
			}
			if !fail && !strings.Contains(string(out), "v_42x") {
				t.Errorf("result %s: want the id, which only contains the pin, kept", out)
			}
		})
	}
}
