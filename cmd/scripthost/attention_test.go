package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/fakesvc"
)

// withoutClock drops what depends on the moment the report was made (at, the ages),
// so that two reports of the same ledger compare equal.
func withoutClock(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range []string{"at", "age_seconds", "expired_seconds"} {
			delete(x, k)
		}
		for k, e := range x {
			x[k] = withoutClock(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withoutClock(e)
		}
	}
	return v
}

// TestAttentionCLIAndAPIAgree leaves a run blocked on an indeterminate mutation, then
// checks that `attention --json` and GET /api/v1/attention report the same thing field
// for field, that the report names the mutation with its params and the resolve
// action, and that the text form says how to resolve it.
func TestAttentionCLIAndAPIAgree(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	e, _, m := indeterminate(t, fakesvc.ApplyDrop)
	s := startServe(t, e.db, e.wf, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken)
	code, body := s.call(http.MethodGet, "/api/v1/attention", testServeToken, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/attention: %d %s", code, body)
	}
	s.close()
	exit, out, errOut := cli(t, "", "--db", e.db, "attention", "--json")
	if exit != 0 {
		t.Fatalf("attention --json: exit %d: %s", exit, errOut)
	}
	var api, got map[string]any
	if err := json.Unmarshal(body, &api); err != nil {
		t.Fatalf("API: %v\n%s", err, body)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("CLI: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(withoutClock(api), withoutClock(got)) {
		t.Errorf("attention --json and the API differ:\nCLI: %s\nAPI: %s", out, body)
	}
	var a struct {
		Indeterminate []struct {
			ID     string          `json:"id"`
			Params json.RawMessage `json:"params"`
		} `json:"indeterminate"`
		Blocked []struct {
			Actions []struct{ Kind, Target string } `json:"actions"`
		} `json:"blocked"`
		Counts struct{ Indeterminate, Blocked int } `json:"counts"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Indeterminate) != 1 || a.Indeterminate[0].ID != m.ID || string(a.Indeterminate[0].Params) == "" ||
		string(a.Indeterminate[0].Params) == "null" || a.Counts.Indeterminate != 1 {
		t.Errorf("indeterminate: got %+v, want mutation %s with its params", a.Indeterminate, m.ID)
	}
	if len(a.Blocked) != 1 || len(a.Blocked[0].Actions) == 0 || a.Blocked[0].Actions[0].Kind != "resolve" ||
		a.Blocked[0].Actions[0].Target != m.ID {
		t.Errorf("blocked: got %+v, want the handler blocked, unblocked by resolving %s", a.Blocked, m.ID)
	}
	exit, out, errOut = cli(t, "", "--db", e.db, "attention")
	if want := "scripthost resolve " + m.ID + " --as applied|failed|skipped"; exit != 0 || !strings.Contains(out, want) ||
		!strings.Contains(out, "params: ") {
		t.Errorf("attention: exit %d, got\n%s%s\nwant it to show the params and say %q", exit, out, errOut, want)
	}
}
