package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// preparedRun publishes order id to the shop workflow and writes a run of take that
// prepared it (reserving the event), as a process stopped before its mutation leaves
// one.
func (e *shopEnv) preparedRun(id string) scripthost.Run {
	e.t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, e.db, sqlite.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Publish(ctx, ledger.NewEvent{Workflow: "shop", Topic: "orders", MessageID: id, Payload: json.RawMessage(`{"n":1}`)}); err != nil {
		e.t.Fatal(err)
	}
	r, err := st.CreateRun(ctx, ledger.NewRun{Workflow: "shop", Version: 1, Handler: "take", Kind: scripthost.KindConsumer})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := st.AdvancePhase(ctx, r.ID, scripthost.RunPending, scripthost.RunPreparing); err != nil {
		e.t.Fatal(err)
	}
	r, err = st.MarkPrepared(ctx, r.ID, ledger.PrepareResult{Data: json.RawMessage(`{"n":1}`),
		Reservations: []scripthost.Reservation{{Topic: "orders", IDs: []string{id}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// TestCancelCLI cancels a run before its mutation: its event is released and the next
// pass applies it once through a new run; a second cancel and an unknown run are
// refused; every attempt is in the audit trail with who asked.
func TestCancelCLI(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	r := e.preparedRun("o1")
	code, out, errOut := e.cli("cancel", r.ID, "--reason", "duplicate order", "--by", "ops")
	if code != 0 || !strings.Contains(out, "run "+r.ID+" cancelled") {
		t.Fatalf("cancel: exit %d: %s%s", code, out, errOut)
	}
	var d view.RunDetail
	code, out, _ = e.cli("show", r.ID)
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("show: exit %d: %v", code, err)
	}
	if d.Status != string(scripthost.StatusCancelled) || d.Run.Error != "cancelled by ops: duplicate order" {
		t.Errorf("show: got %s %q, want cancelled by ops", d.Status, d.Run.Error)
	}
	if code, _, errOut := e.cli("cancel", r.ID); code != exitRefused || !strings.Contains(errOut, "final") {
		t.Errorf("cancel again: exit %d, want %d: %s", code, exitRefused, errOut)
	}
	if code, _, errOut := e.cli("cancel", "nosuch"); code != exitRefused {
		t.Errorf("cancel unknown run: exit %d, want %d: %s", code, exitRefused, errOut)
	}
	var got []string
	for _, a := range e.actions() {
		if a.StepID == "cancel" {
			got = append(got, map[bool]string{true: "ok", false: "refused"}[a.Success])
			if a.Success && !strings.Contains(string(a.Arguments), `"by":"ops"`) {
				t.Errorf("cancel recorded as %s, want by ops", a.Arguments)
			}
		}
	}
	if strings.Join(got, " ") != "ok refused refused" {
		t.Errorf("audit trail: got %v, want ok refused refused", got)
	}
	// The released event goes to a new run, which writes the order once.
	e.run(0)
	if b, err := os.ReadFile(filepath.Join(e.ws, "order-1.txt")); err != nil || string(b) != "n=1" {
		t.Errorf("order-1.txt: %q %v, want n=1", b, err)
	}
}

// TestServeCancel cancels a run through POST /api/v1/runs/{id}/cancel: a token is
// required, the run is cancelled with its event released, a second cancel is a 409, and
// /api/v1/actions lists both.
func TestServeCancel(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	if code, out, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: exit %d: %s%s", code, out, errOut)
	}
	r := e.preparedRun("o1")
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	body := map[string]any{"reason": "duplicate", "by": "ops"}
	if code, b := s.call("POST", "/api/v1/runs/"+r.ID+"/cancel", "", body); code != http.StatusUnauthorized {
		t.Fatalf("cancel without a token: got %d: %s", code, b)
	}
	var c view.Cancelled
	s.want("POST", "/api/v1/runs/"+r.ID+"/cancel", body, http.StatusOK, &c)
	if c.Requested || c.Run.Status != scripthost.StatusCancelled || !strings.Contains(c.Message, "cancelled") {
		t.Fatalf("cancel: got %+v", c)
	}
	var evs []scripthost.Event
	s.get("/api/v1/events?workflow=shop", &evs)
	if len(evs) != 1 || evs[0].Status != scripthost.EventPending {
		t.Errorf("events: got %+v, want o1 pending again", evs)
	}
	if code, b := s.call("POST", "/api/v1/runs/"+r.ID+"/cancel", testServeToken, nil); code != http.StatusConflict ||
		!strings.Contains(string(b), "final") {
		t.Errorf("cancel again: got %d: %s", code, b)
	}
	var acts []struct {
		Action  string `json:"action"`
		Target  string `json:"target"`
		By      string `json:"by"`
		Success bool   `json:"success"`
	}
	s.get("/api/v1/actions", &acts)
	var got []string
	for _, a := range acts {
		if a.Action == "cancel" && a.Target == r.ID {
			got = append(got, a.By+":"+map[bool]string{true: "ok", false: "refused"}[a.Success])
		}
	}
	if strings.Join(got, " ") != "ops:ok api:refused" {
		t.Errorf("actions: got %v, want ops:ok api:refused", got)
	}
}

// TestCLIActionsInAuditTrail resolves a mutation, retries a failed run and decides an
// agent call from the CLI: each lands in the audit trail scripthost serve keeps, so
// GET /api/v1/actions lists them with who asked, done or refused.
func TestCLIActionsInAuditTrail(t *testing.T) {
	e := newShopEnv(t, shopWorkflow)
	e.run(0)
	if code, _, errOut := e.cli("pause", "shop"); code != 0 {
		t.Fatalf("pause: %s", errOut)
	}
	r := e.preparedRun("o1")
	ctx := context.Background()
	st, err := sqlite.Open(ctx, e.db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AdvancePhase(ctx, r.ID, scripthost.RunPrepared, scripthost.RunMutating); err != nil {
		t.Fatal(err)
	}
	m, err := st.BeginMutation(ctx, ledger.NewMutation{RunID: r.ID, Namespace: "Files", Method: "write",
		Params: json.RawMessage(`{}`), InputHash: "h1", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.MarkIndeterminate(ctx, m.ID, "no answer"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if code, out, errOut := e.cli("resolve", m.ID, "--as", "failed", "--by", "ops"); code != 0 {
		t.Fatalf("resolve: exit %d: %s%s", code, out, errOut)
	}
	code, out, errOut := e.cli("retry", r.ID, "--by", "ops")
	if code != 0 {
		t.Fatalf("retry: exit %d: %s%s", code, out, errOut)
	}
	if code, _, _ := e.cli("retry", r.ID, "--by", "ops"); code != exitRefused {
		t.Errorf("retry again: exit %d, want %d", code, exitRefused)
	}
	if code, _, _ := e.cli("agent", "approve", "nosuch", "step/1/1", "--by", "ops"); code == 0 {
		t.Errorf("approve in an unknown session: exit 0, want a refusal")
	}
	s := startServe(t, e.db, e.wf, "--workspace", e.ws, "--token", testServeToken)
	var acts []struct {
		Action  string `json:"action"`
		Target  string `json:"target"`
		By      string `json:"by"`
		Success bool   `json:"success"`
	}
	s.get("/api/v1/actions", &acts)
	var got []string
	for _, a := range acts {
		if a.Action != "pause" {
			got = append(got, a.Action+":"+a.By+":"+map[bool]string{true: "ok", false: "refused"}[a.Success])
		}
	}
	want := "resolve:ops:ok retry:ops:ok retry:ops:refused approve:ops:refused"
	if strings.Join(got, " ") != want {
		t.Errorf("actions:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}
