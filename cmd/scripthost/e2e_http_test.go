package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// The end-to-end tests run the charges workflow (testdata/http) through the CLI against
// the fake payment service, and read the outcome back through the CLI's JSON listings.

// tokenEnv is the variable the tool files read their Authorization header from.
const tokenEnv = "FAKESVC_TOKEN"

// e2eToken is the secret header value; it looks like no credential format, so only its
// registration as a tool secret can keep it out of what the host writes.
const e2eToken = "tok-e2e-4c1f9a7b2d8e6053"

// httpEnv is one ledger, one service and one workflow on disk.
type httpEnv struct {
	t     *testing.T
	dir   string
	db    string
	wf    string
	tools string
}

// newHTTPEnv writes the charges workflow with count events and the tool file named by
// toolsFile (tools.json or tools-blind.json), its URLs pointing at base, into a fresh
// directory.
func newHTTPEnv(t *testing.T, base, toolsFile string, count int, timeout string) *httpEnv {
	t.Helper()
	dir := t.TempDir()
	e := &httpEnv{t: t, dir: dir, db: filepath.Join(t.TempDir(), "ledger.db"),
		wf: filepath.Join(dir, "charges.js"), tools: filepath.Join(dir, "tools.json")}
	wf := readTestdata(t, "charges.js")
	if count != 1 {
		wf = strings.Replace(wf, "const COUNT = 1;", fmt.Sprintf("const COUNT = %d;", count), 1)
	}
	tools := strings.NewReplacer("{{BASE}}", base, "{{TIMEOUT}}", timeout).Replace(readTestdata(t, toolsFile))
	writeFile(t, e.wf, wf)
	writeFile(t, e.tools, tools)
	return e
}

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "http", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs the workflow once in-process and returns the exit code and both streams.
func (e *httpEnv) run(extra ...string) (int, string, string) {
	e.t.Helper()
	args := append([]string{"--db", e.db, "run", e.wf, "--once", "--tools", e.tools, "--workspace", e.dir}, extra...)
	return cli(e.t, "", args...)
}

// passDone reports whether run --once ended its pass normally: 0, or the codes that
// say runs are left for a person or for a later automatic retry.
func passDone(code int) bool { return code == 0 || code == exitBlocked || code == exitUnfinished }

// mustRun runs the workflow once and fails the test unless its pass ended normally.
func (e *httpEnv) mustRun(extra ...string) string {
	e.t.Helper()
	code, out, errOut := e.run(extra...)
	if !passDone(code) {
		e.t.Fatalf("run: got exit %d, want 0, %d or %d\nstdout:\n%s\nstderr:\n%s", code, exitBlocked, exitUnfinished, out, errOut)
	}
	return out + errOut
}

// listJSON runs a listing command with --json and decodes its output into v.
func (e *httpEnv) listJSON(v any, args ...string) {
	e.t.Helper()
	code, out, errOut := cli(e.t, "", append([]string{"--db", e.db}, append(args, "--json")...)...)
	if code != 0 {
		e.t.Fatalf("%v: got exit %d: %s", args, code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func (e *httpEnv) mutations() []mutationView {
	e.t.Helper()
	var ms []mutationView
	e.listJSON(&ms, "mutations")
	return ms
}

// consumerRuns lists the charge consumer's runs, oldest first.
func (e *httpEnv) consumerRuns() []scripthost.Run {
	e.t.Helper()
	var runs []scripthost.Run
	e.listJSON(&runs, "runs")
	var out []scripthost.Run
	for _, r := range runs {
		if r.Handler == "charge" {
			out = append(out, r)
		}
	}
	return out
}

// events returns the status of every charge event by id.
func (e *httpEnv) events() map[string]scripthost.EventStatus {
	e.t.Helper()
	var evs []scripthost.Event
	e.listJSON(&evs, "events")
	out := map[string]scripthost.EventStatus{}
	for _, ev := range evs {
		out[ev.MessageID] = ev.Status
	}
	return out
}

// snapshot is everything the CLI lists, for checking that a refused command changed
// nothing.
func (e *httpEnv) snapshot() string {
	e.t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"runs"}, {"mutations"}, {"events"}} {
		_, out, _ := cli(e.t, "", append([]string{"--db", e.db}, append(args, "--json")...)...)
		b.WriteString(out)
	}
	return b.String()
}

// matrixRow is the expected end state of one charge after one behaviour of the service.
type matrixRow struct {
	mutation scripthost.MutationStatus
	run      scripthost.RunStatus
	event    scripthost.EventStatus
	applies  int
}

// TestHTTPOutcomeMatrix runs every behaviour of the service × {reconciler declared, not
// declared} through the CLI, the workflow and the ledger, and checks the mutation, the
// run, the event and the service's own apply count, twice: a second run of the host
// must change nothing (nothing is re-sent, nothing released while unknown).
func TestHTTPOutcomeMatrix(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	applied := matrixRow{scripthost.MutationApplied, scripthost.StatusCommitted, scripthost.EventConsumed, 1}
	refused := matrixRow{scripthost.MutationFailed, scripthost.StatusFailedLogic, scripthost.EventPending, 0}
	denied := matrixRow{scripthost.MutationFailed, scripthost.StatusPausedApproval, scripthost.EventPending, 0}
	waiting := matrixRow{scripthost.MutationNeedsReconcile, scripthost.StatusPausedReconciliation, scripthost.EventReserved, 0}
	unknown := func(applies int) matrixRow {
		return matrixRow{scripthost.MutationIndeterminate, scripthost.StatusPausedReconciliation, scripthost.EventReserved, applies}
	}
	tests := []struct {
		behavior   fakesvc.Behavior
		reconciled matrixRow // with a reconcile request declared
		blind      matrixRow // without one
	}{
		{fakesvc.Succeed, applied, applied},
		{fakesvc.Fail4xx, refused, refused},
		{fakesvc.Unauthorized, denied, denied},
		{fakesvc.Forbidden, denied, denied},
		// 503 before applying: the reconcile request finds nothing, which is trusted
		// once the first request cannot still be under way; the run is then prepared
		// again and its new charge meets the same 503. Without a reconcile request
		// nobody can tell.
		{fakesvc.Fail5xx, waiting, unknown(0)},
		{fakesvc.ApplyTimeout, applied, unknown(1)},
		{fakesvc.ApplyDrop, applied, unknown(1)},
	}
	for _, tc := range tests {
		for _, reconciler := range []bool{true, false} {
			name, file, want := string(tc.behavior)+"/reconciler", "tools.json", tc.reconciled
			if !reconciler {
				name, file, want = string(tc.behavior)+"/no-reconciler", "tools-blind.json", tc.blind
			}
			t.Run(name, func(t *testing.T) {
				svc := fakesvc.New()
				defer svc.Close()
				svc.SetDefault(tc.behavior)
				e := newHTTPEnv(t, svc.URL(), file, 1, "400ms")
				e.mustRun()
				if want == waiting {
					// The look-up's 404 came inside the window in which a slow first
					// request could still land (timeout + settle, 800ms): nothing is
					// released, and the next attempt, due after it, trusts the 404.
					e.checkRow(t, svc, waiting)
					m := e.mutations()[0]
					if end := m.CreatedAt.Add(800 * time.Millisecond); m.NextReconcileAt == nil || m.NextReconcileAt.Before(end) {
						t.Fatalf("next reconcile at %v, want after the window ends at %s", m.NextReconcileAt, end)
					}
					time.Sleep(time.Until(*m.NextReconcileAt))
					e.mustRun()
					if got := e.mutations(); len(got) != 2 || got[0].Status != scripthost.MutationFailed || !strings.Contains(got[0].Error, "reconciled as failed") {
						t.Fatalf("after the window: got %+v, want the first charge reconciled as failed and a second one", got)
					}
				}
				e.checkRow(t, svc, want)
				before, total := e.snapshot(), svc.Total()
				e.mustRun()
				if after := e.snapshot(); after != before || svc.Total() != total {
					t.Errorf("a second run changed the ledger or the service (%d → %d applies):\nbefore:\n%s\nafter:\n%s", total, svc.Total(), before, after)
				}
				// Every request carried a key the ledger holds, and the secret header.
				keys := map[string]bool{}
				for _, m := range e.mutations() {
					keys[m.IdempotencyKey] = true
				}
				for _, r := range svc.Requests() {
					if r.Method != http.MethodPost {
						continue
					}
					if got := r.Header.Get("Idempotency-Key"); !keys[got] {
						t.Errorf("Idempotency-Key header: got %q, want one of the ledger's keys %v", got, keys)
					}
					if got := r.Header.Get("Authorization"); got != "Bearer "+e2eToken {
						t.Errorf("Authorization header: got %q, want the token from %s", got, tokenEnv)
					}
				}
			})
		}
	}
}

// checkRow checks the newest mutation, the consumer's newest run, the event and the
// service's counts against want. A mutation that is known to have failed may have been
// followed by fresh runs; none of them may have applied twice.
func (e *httpEnv) checkRow(t *testing.T, svc *fakesvc.Server, want matrixRow) {
	t.Helper()
	ms := e.mutations()
	runs := e.consumerRuns()
	if len(ms) == 0 || len(runs) != len(ms) {
		t.Fatalf("got %d mutations and %d consumer runs, want as many, at least 1", len(ms), len(runs))
	}
	m, r := ms[len(ms)-1], runs[len(runs)-1]
	if m.RunID != r.ID {
		t.Fatalf("newest mutation belongs to run %s, want the newest run %s", m.RunID, r.ID)
	}
	for _, old := range ms[:len(ms)-1] {
		if old.Status != scripthost.MutationFailed {
			t.Errorf("earlier mutation %s: got %s, want failed (only a known failure is tried again)", old.ID, old.Status)
		}
	}
	if m.Status != want.mutation {
		t.Errorf("mutation: got %s (%s), want %s", m.Status, m.Error, want.mutation)
	}
	if r.Status != want.run {
		t.Errorf("run: got %s (%s), want %s", r.Status, r.Error, want.run)
	}
	if got := e.events()["ch-1"]; got != want.event {
		t.Errorf("event: got %s, want %s", got, want.event)
	}
	for _, x := range ms {
		if got := svc.Applies(x.IdempotencyKey); got > 1 {
			t.Errorf("applies of %s: got %d, want at most 1", x.IdempotencyKey, got)
		}
	}
	if got := svc.Applies(m.IdempotencyKey); got != want.applies {
		t.Errorf("applies of %s: got %d, want %d", m.IdempotencyKey, got, want.applies)
	}
	if got := svc.Total(); got != want.applies {
		t.Errorf("applies in total: got %d, want %d", got, want.applies)
	}
}

// echoService is a payment service that repeats the request's Authorization header in
// every answer: success, refusal, outage and reconcile look-up alike.
type echoService struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status int // the answer to a charge
	seen   []string
}

func newEchoService(t *testing.T) *echoService {
	s := &echoService{status: http.StatusOK}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		s.mu.Lock()
		s.seen = append(s.seen, auth)
		status := s.status
		s.mu.Unlock()
		if r.Method == http.MethodGet {
			status = http.StatusInternalServerError // the look-up cannot tell yet
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"id":"ch_1","note":"request made with %s","header":%q}`, auth, auth)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// TestSecretHeaderNeverWritten runs charges against a service that echoes the secret
// header back in every answer, with verbose logging, and greps everything the host
// wrote for it: its output and logs, every listing, every run shown in full, every
// error message, and the ledger's files byte for byte.
func TestSecretHeaderNeverWritten(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := newEchoService(t)
	tests := []struct {
		name   string
		status int
		tools  string
		want   scripthost.MutationStatus
	}{
		{"applied", http.StatusOK, "tools.json", scripthost.MutationApplied},
		{"refused", http.StatusUnprocessableEntity, "tools.json", scripthost.MutationFailed},
		{"unauthorized", http.StatusUnauthorized, "tools.json", scripthost.MutationFailed},
		{"reconcile later", http.StatusServiceUnavailable, "tools.json", scripthost.MutationNeedsReconcile},
		{"indeterminate", http.StatusBadGateway, "tools-blind.json", scripthost.MutationIndeterminate},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc.mu.Lock()
			svc.status, svc.seen = tc.status, nil
			svc.mu.Unlock()
			e := newHTTPEnv(t, svc.srv.URL, tc.tools, 1, "2s")
			var written strings.Builder
			code, out, errOut := e.run("--verbose")
			written.WriteString(out + errOut)
			if !passDone(code) {
				t.Fatalf("run: got exit %d\n%s", code, errOut)
			}
			ms := e.mutations()
			if len(ms) == 0 || ms[0].Status != tc.want {
				t.Fatalf("got mutations %+v, want the first %s", ms, tc.want)
			}
			svc.mu.Lock()
			if len(svc.seen) == 0 || svc.seen[0] != "Bearer "+e2eToken {
				t.Fatalf("the service got Authorization %q, want the token from %s", svc.seen, tokenEnv)
			}
			svc.mu.Unlock()
			for _, args := range [][]string{{"runs"}, {"mutations"}, {"events"}, {"runs", "--json"}, {"mutations", "--json"}} {
				_, out, errOut := cli(t, "", append([]string{"--db", e.db}, args...)...)
				written.WriteString(out + errOut)
			}
			var runs []scripthost.Run
			e.listJSON(&runs, "runs")
			for _, r := range runs {
				_, out, errOut := cli(t, "", "--db", e.db, "show", r.ID)
				written.WriteString(out + errOut + r.Error)
			}
			for _, m := range ms {
				_, _, errOut := cli(t, "", "--db", e.db, "retry", m.RunID)
				written.WriteString(m.Error + errOut)
			}
			if strings.Contains(written.String(), e2eToken) {
				t.Errorf("the secret appears in what the host printed:\n%s", written.String())
			}
			// The echo did reach the host: it shows up, redacted.
			if !strings.Contains(written.String(), "Bearer "+hostfuncs.Redacted) {
				t.Errorf("the echoed header was not shown redacted:\n%s", written.String())
			}
			files, _ := filepath.Glob(e.db + "*")
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte(e2eToken)) {
					t.Errorf("the secret appears in the ledger file %s", filepath.Base(f))
				}
			}
		})
	}
}

// TestPaymentsExample runs scripts/payments through the CLI against the fake service
// (its tool file pointed at it), the first charge's answer lost, twice: each unpaid
// invoice is charged once, the lost answer is reconciled, and the second run charges
// nothing.
func TestPaymentsExample(t *testing.T) {
	t.Setenv("PAYMENTS_API_KEY", "sk_example_key_123")
	svc := fakesvc.New()
	defer svc.Close()
	svc.Next(fakesvc.ApplyDrop)
	const example = "../../scripts/payments"
	dir := t.TempDir()
	for _, f := range []string{"workflow.js", "invoices.json"} {
		writeFile(t, filepath.Join(dir, f), readFileT(t, filepath.Join(example, f)))
	}
	tools := strings.ReplaceAll(readFileT(t, filepath.Join(example, "tools.json")), "http://127.0.0.1:8787", svc.URL())
	writeFile(t, filepath.Join(dir, "tools.json"), tools)
	e := &httpEnv{t: t, dir: dir, db: filepath.Join(t.TempDir(), "ledger.db"), wf: filepath.Join(dir, "workflow.js"), tools: filepath.Join(dir, "tools.json")}

	out := e.mustRun("--name", "payments")
	for _, want := range []string{"invoice inv-1001: applied as obj_1", "invoice inv-1004: applied"} {
		if !strings.Contains(out, want) {
			t.Errorf("output: got\n%s\nwant %q", out, want)
		}
	}
	e.mustRun("--name", "payments")
	paid := map[string]int{}
	for _, m := range e.mutations() {
		if m.Status != scripthost.MutationApplied || svc.Applies(m.IdempotencyKey) != 1 {
			t.Errorf("mutation %s: got %s with %d applies, want applied once", m.ID, m.Status, svc.Applies(m.IdempotencyKey))
		}
		paid[chargeField(t, m.Params, "invoice")]++
	}
	want := map[string]int{"inv-1001": 1, "inv-1002": 1, "inv-1004": 1}
	if fmt.Sprint(paid) != fmt.Sprint(want) || svc.Total() != 3 {
		t.Errorf("charges: got %v (%d applies), want %v", paid, svc.Total(), want)
	}
	var runs []scripthost.Run
	e.listJSON(&runs, "runs")
	var state json.RawMessage
	for _, r := range runs {
		if r.Handler == "pay" && r.Status == scripthost.StatusCommitted {
			state = r.OutputState
		}
	}
	if got, want := canonical(t, state), `{"cents":18199,"paid":3}`; got != want {
		t.Errorf("state: got %s, want %s", got, want)
	}
}

func readFileT(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// chargeField returns a string field of a JSON object.
func chargeField(t *testing.T, raw json.RawMessage, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	s, _ := m[field].(string)
	return s
}

// BenchmarkHTTPChargeEndToEnd measures one charge through the whole stack: a consumer
// run of three phases in fresh sandboxes, the durable in-flight write, the HTTP call to
// the fake service on loopback, the outcome and the commit, driven by run --once.
func BenchmarkHTTPChargeEndToEnd(b *testing.B) {
	b.Setenv(tokenEnv, e2eToken)
	svc := fakesvc.New()
	defer svc.Close()
	// A producer run publishes at most 1000 events: charge in chunks, each with its
	// own ledger, all but the setup timed.
	for done := 0; done < b.N; {
		b.StopTimer()
		n := min(500, b.N-done)
		dir := b.TempDir()
		wf, tools := filepath.Join(dir, "charges.js"), filepath.Join(dir, "tools.json")
		writeFile(b, wf, strings.Replace(readTestdata(b, "charges.js"), "const COUNT = 1;", fmt.Sprintf("const COUNT = %d;", n), 1))
		writeFile(b, tools, strings.NewReplacer("{{BASE}}", svc.URL(), "{{TIMEOUT}}", "10s").Replace(readTestdata(b, "tools.json")))
		var out, errOut bytes.Buffer
		args := []string{"--db", filepath.Join(b.TempDir(), "ledger.db"), "run", wf, "--once", "--tools", tools, "--workspace", dir}
		b.StartTimer()
		if code := execute(context.Background(), args, strings.NewReader(""), &out, &errOut); code != 0 {
			b.Fatalf("run: exit %d: %s", code, errOut.String())
		}
		done += n
	}
	b.StopTimer()
	if got := svc.Total(); got != b.N {
		b.Fatalf("applies: got %d, want %d", got, b.N)
	}
}
