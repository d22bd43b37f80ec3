package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// failedRun makes a run of the shop workflow whose mutation an operator resolved as
// failed: a run retry takes.
func (e *shopEnv) failedRun(event string) scripthost.Run {
	e.t.Helper()
	r := e.preparedRun(event)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, e.db, sqlite.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.AdvancePhase(ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating); err != nil {
		e.t.Fatal(err)
	}
	m, err := st.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Files", Method: "write",
		Params: json.RawMessage(`{}`), InputHash: "h-" + event, IdempotencyKey: "k-" + event})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := st.MarkIndeterminate(ctx, m.ID, "no answer"); err != nil {
		e.t.Fatal(err)
	}
	if _, err := st.Resolve(ctx, m.ID, ledger.Resolution{As: scripthost.MutationFailed, By: "test"}); err != nil {
		e.t.Fatal(err)
	}
	return r
}

// TestRetryReasonInAuditTrail: `retry RUN --reason` and POST /api/v1/runs/{id}/retry
// with a reason record it in the retry's audit entry; a retry without one records
// none.
func TestRetryReasonInAuditTrail(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	if code, _, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: %s", errOut)
	}
	cliRun, apiRun, bare := e.failedRun("o1"), e.failedRun("o2"), e.failedRun("o3")
	if code, out, errOut := e.cli("retry", cliRun.ID, "--by", "ops", "--reason", "the stock service is fixed"); code != 0 {
		t.Fatalf("retry: exit %d: %s%s", code, out, errOut)
	}
	if code, out, errOut := e.cli("retry", bare.ID, "--by", "ops"); code != 0 {
		t.Fatalf("retry without a reason: exit %d: %s%s", code, out, errOut)
	}
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	s.want("POST", "/api/v1/runs/"+apiRun.ID+"/retry", map[string]any{"by": "api-ops", "reason": "retried after the outage"}, http.StatusOK, nil)
	s.close()
	want := []string{
		"retry:" + cliRun.ID + ":ops:the stock service is fixed:ok",
		"retry:" + bare.ID + ":ops::ok",
		"retry:" + apiRun.ID + ":api-ops:retried after the outage:ok",
	}
	trail := auditTrail(t, e.db)
	for _, w := range want {
		if !slices.Contains(trail, w) {
			t.Errorf("audit trail %q lacks %q", trail, w)
		}
	}
}

// TestAgentDecisionReasonInAuditTrail: `agent approve|deny --reason` and the API's
// approve and deny with a reason record it in the decision's audit entry.
func TestAgentDecisionReasonInAuditTrail(t *testing.T) {
	for _, tc := range []struct {
		name, verb string
		api        bool
	}{
		{"cli approve", "approve", false},
		{"cli deny", "deny", false},
		{"api approve", "approve", true},
		{"api deny", "deny", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "ledger.db")
			p := newPendingAgent(t, db)
			reason := "looked at the diff (" + tc.name + ")"
			if tc.api {
				s := startServe(t, db, "--token", testServeToken)
				s.want("POST", "/api/v1/agent/sessions/"+p.session+"/"+tc.verb,
					map[string]string{"call": p.call, "by": "carol", "reason": reason}, http.StatusOK, nil)
				s.close()
			} else if code, out, errOut := cli(t, "", "--db", db, "agent", tc.verb, p.session, p.call, "--by", "carol", "--reason", reason); code != 0 {
				t.Fatalf("agent %s: exit %d: %s%s", tc.verb, code, out, errOut)
			}
			want := tc.verb + ":agent session " + p.session + " call " + p.call + ":carol:" + reason + ":ok"
			if trail := auditTrail(t, db); !slices.Contains(trail, want) {
				t.Errorf("audit trail %q lacks %q", trail, want)
			}
		})
	}
}
