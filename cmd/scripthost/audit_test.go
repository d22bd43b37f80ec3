package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// auditTrail reads the operator actions of the ledger at db, oldest first, as
// "action:target:by:reason:ok|refused".
func auditTrail(t *testing.T, db string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Executions(ctx, ledger.ExecutionFilter{PlanID: view.AuditPlan})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		var args struct {
			Target  string `json:"target"`
			By      string `json:"by"`
			Request struct {
				Reason string `json:"reason"`
			} `json:"request"`
		}
		if err := json.Unmarshal(r.Arguments, &args); err != nil {
			t.Fatalf("audit record %s: %v", r.ExecutionID, err)
		}
		out = append(out, strings.Join([]string{r.StepID, args.Target, args.By, args.Request.Reason,
			map[bool]string{true: "ok", false: "refused"}[r.Success]}, ":"))
	}
	return out
}

// TestPlanDecisionsInAuditTrail: `plan approve` and `plan approve --deny` write their
// authorization record and record the decision in the ledger's audit trail, the one
// the other operator actions use, with who decided and the note as the reason; without
// a ledger the record is still written and the operator is told it is in no trail.
func TestPlanDecisionsInAuditTrail(t *testing.T) {
	_, db := tidyWorkspace(t)
	if code, _, errOut := cli(t, "", "--db", db, "plan", "run", tidyPlan, "--approve", "--by", "ci",
		"--non-interactive=approve", "--allow-read-only", "wc", "--workspace", t.TempDir()); code == exitLedger {
		t.Fatalf("plan run to create the ledger: exit %d: %s", code, errOut)
	}
	dir := t.TempDir()
	auth, denied := filepath.Join(dir, "auth.json"), filepath.Join(dir, "denied.json")
	if code, _, errOut := cli(t, "", "--db", db, "plan", "approve", tidyPlan, "--by", "alice", "--note", "reviewed the moves", "-o", auth); code != 0 {
		t.Fatalf("approve: exit %d: %s", code, errOut)
	}
	if code, _, errOut := cli(t, "", "--db", db, "plan", "approve", tidyPlan, "--deny", "--by", "bob", "--note", "too broad", "-o", denied); code != 0 {
		t.Fatalf("approve --deny: exit %d: %s", code, errOut)
	}
	for _, f := range []string{auth, denied} {
		if b, err := os.ReadFile(f); err != nil || !strings.Contains(string(b), `"plan_hash"`) {
			t.Errorf("authorization record %s: %v %s", f, err, b)
		}
	}
	var got []string
	for _, a := range auditTrail(t, db) {
		if strings.HasPrefix(a, "plan_") {
			got = append(got, a)
		}
	}
	want := []string{"plan_approve:tidy:alice:reviewed the moves:ok", "plan_deny:tidy:bob:too broad:ok"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("audit trail: got %q, want %q", got, want)
	}

	none := filepath.Join(t.TempDir(), "none.db")
	code, out, errOut := cli(t, "", "--db", none, "plan", "approve", tidyPlan, "--by", "alice")
	if code != 0 || !strings.Contains(out, `"status": "approved"`) || !strings.Contains(errOut, "not in an audit trail") {
		t.Errorf("approve without a ledger: exit %d\n%s%s\nwant the record, and a note that no trail has it", code, out, errOut)
	}
	if _, err := os.Stat(none); err == nil {
		t.Errorf("approve without a ledger created one at %s", none)
	}
}
