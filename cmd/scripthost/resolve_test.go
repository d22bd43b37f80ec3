package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// indeterminate runs the charges workflow with no reconcile request against a service
// that answers the first charge with first, and returns the mutation the host could not
// settle.
func indeterminate(t *testing.T, first fakesvc.Behavior) (*httpEnv, *fakesvc.Server, mutationView) {
	t.Helper()
	svc := fakesvc.New()
	t.Cleanup(svc.Close)
	svc.Next(first)
	e := newHTTPEnv(t, svc.URL(), "tools-blind.json", 1, "400ms")
	e.mustRun()
	ms := e.mutations()
	if len(ms) != 1 || ms[0].Status != scripthost.MutationIndeterminate {
		t.Fatalf("setup: got mutations %+v, want one indeterminate", ms)
	}
	if r := e.consumerRuns(); r[0].Status != scripthost.StatusPausedReconciliation {
		t.Fatalf("setup: got run %s, want paused:reconciliation", r[0].Status)
	}
	return e, svc, ms[0]
}

// TestResolveContinuesTheRun resolves an indeterminate mutation through the CLI each
// way, runs the host again, and checks that the run goes on as the resolution says and
// that the resolution is recorded with who and when.
func TestResolveContinuesTheRun(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	tests := []struct {
		as    string
		first fakesvc.Behavior // what the service did with the unsettled charge
		args  []string
		event scripthost.EventStatus
		// state is the consumer's state after the run: what next was given.
		state   string
		applies int
	}{
		{"applied", fakesvc.ApplyDrop, []string{"--result", `{"id":"ch_manual"}`}, scripthost.EventConsumed,
			`{"last":"ch-1","result":{"id":"ch_manual"},"seen":1,"status":"applied"}`, 1},
		{"skipped", fakesvc.ApplyDrop, nil, scripthost.EventSkipped,
			`{"last":"ch-1","result":null,"seen":1,"status":"skipped"}`, 1},
		// It did not happen: the event is released and a fresh run charges it with a
		// new key (the service answers the next request normally).
		{"failed", fakesvc.Fail5xx, nil, scripthost.EventConsumed, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.as, func(t *testing.T) {
			e, svc, m := indeterminate(t, tc.first)
			args := append([]string{"--db", e.db, "resolve", m.ID, "--as", tc.as, "--by", "alice"}, tc.args...)
			code, out, errOut := cli(t, "", args...)
			if code != 0 {
				t.Fatalf("resolve: got exit %d: %s", code, errOut)
			}
			if want := "resolved as " + tc.as + " by alice"; !strings.Contains(out, want) {
				t.Errorf("resolve: got %q, want it to say %q", out, want)
			}
			e.mustRun()

			ms := e.mutations()
			got := ms[0]
			if string(got.Status) != tc.as || got.ResolvedBy != "alice" || got.ResolvedAt == nil {
				t.Errorf("resolved mutation: got %s by %q at %v, want %s by alice with a time", got.Status, got.ResolvedBy, got.ResolvedAt, tc.as)
			}
			if got := e.events()["ch-1"]; got != tc.event {
				t.Errorf("event: got %s, want %s", got, tc.event)
			}
			runs := e.consumerRuns()
			last := runs[len(runs)-1]
			if last.Status != scripthost.StatusCommitted {
				t.Errorf("newest run: got %s (%s), want committed", last.Status, last.Error)
			}
			if tc.state != "" {
				if got := canonical(t, last.OutputState); got != tc.state {
					t.Errorf("state after next: got %s, want %s", got, tc.state)
				}
			}
			if got := svc.Total(); got != tc.applies {
				t.Errorf("applies: got %d, want %d", got, tc.applies)
			}
			if tc.as != "failed" {
				if len(ms) != 1 || len(runs) != 1 {
					t.Errorf("got %d mutations in %d runs, want the one run to go on", len(ms), len(runs))
				}
				return
			}
			// A fresh run prepared again and charged under a new key.
			if len(ms) != 2 || len(runs) != 2 {
				t.Fatalf("got %d mutations in %d runs, want a second run with its own mutation", len(ms), len(runs))
			}
			if ms[1].Status != scripthost.MutationApplied || ms[1].IdempotencyKey == m.IdempotencyKey {
				t.Errorf("fresh mutation: got %s with key %s, want applied with a key other than %s", ms[1].Status, ms[1].IdempotencyKey, m.IdempotencyKey)
			}
			if svc.Applies(m.IdempotencyKey) != 0 || svc.Applies(ms[1].IdempotencyKey) != 1 {
				t.Errorf("applies by key: got %d and %d, want 0 and 1", svc.Applies(m.IdempotencyKey), svc.Applies(ms[1].IdempotencyKey))
			}
		})
	}
}

// canonical re-encodes a JSON value with sorted keys.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	b, err := scripthost.CanonicalJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return string(b)
}

// TestResolveRefused checks that a resolution the mutation's status does not allow is
// refused with a clear error and changes nothing, and that --force resolves a mutation
// still being reconciled.
func TestResolveRefused(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)

	t.Run("settled", func(t *testing.T) {
		svc := fakesvc.New()
		defer svc.Close()
		e := newHTTPEnv(t, svc.URL(), "tools.json", 1, "400ms")
		e.mustRun()
		m := e.mutations()[0]
		if m.Status != scripthost.MutationApplied {
			t.Fatalf("setup: got %s, want applied", m.Status)
		}
		before := e.snapshot()
		for _, as := range []string{"applied", "failed", "skipped"} {
			for _, force := range []bool{false, true} {
				args := []string{"--db", e.db, "resolve", m.ID, "--as", as}
				if force {
					args = append(args, "--force")
				}
				code, _, errOut := cli(t, "", args...)
				if code != exitRefused {
					t.Errorf("resolve applied as %s (force %v): got exit %d, want %d", as, force, code, exitRefused)
				}
				if !strings.Contains(errOut, m.ID) || !strings.Contains(errOut, "applied") {
					t.Errorf("resolve applied as %s: got error %q, want it to name the mutation and its status", as, errOut)
				}
			}
		}
		if after := e.snapshot(); after != before {
			t.Errorf("a refused resolution changed the ledger:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})

	t.Run("twice", func(t *testing.T) {
		e, _, m := indeterminate(t, fakesvc.ApplyDrop)
		if code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "skipped"); code != 0 {
			t.Fatalf("first resolution: got exit %d: %s", code, errOut)
		}
		before := e.snapshot()
		code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "applied")
		if code != exitRefused || !strings.Contains(errOut, "skipped") {
			t.Errorf("second resolution: got exit %d %q, want %d naming its status skipped", code, errOut, exitRefused)
		}
		if after := e.snapshot(); after != before {
			t.Errorf("a refused resolution changed the ledger")
		}
	})

	t.Run("usage", func(t *testing.T) {
		e, _, m := indeterminate(t, fakesvc.ApplyDrop)
		before := e.snapshot()
		for _, tc := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"resolve", m.ID, "--as", "done"}, 2, "want applied, failed or skipped"},
			{[]string{"resolve", m.ID, "--as", "failed", "--result", "{}"}, 2, "--result goes with --as applied"},
			{[]string{"resolve", m.ID, "--as", "applied", "--result", "{oops"}, 2, "not valid JSON"},
			{[]string{"resolve", "no-such-mutation", "--as", "applied"}, exitRefused, "not found"},
		} {
			code, _, errOut := cli(t, "", append([]string{"--db", e.db}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("%v: got exit %d %q, want %d with %q", tc.args, code, errOut, tc.code, tc.want)
			}
		}
		if after := e.snapshot(); after != before {
			t.Errorf("a refused resolution changed the ledger")
		}
	})

	// The service applied the charge, then dropped the connection, and cannot answer
	// the reconcile request yet: the mutation waits for another attempt.
	t.Run("needs_reconcile", func(t *testing.T) {
		svc := fakesvc.New()
		defer svc.Close()
		svc.Next(fakesvc.ApplyDrop)
		svc.SetReconcile(fakesvc.ReconcileError)
		e := newHTTPEnv(t, svc.URL(), "tools.json", 1, "400ms")
		e.mustRun()
		m := e.mutations()[0]
		if m.Status != scripthost.MutationNeedsReconcile || m.ReconcileAttempts < 1 || m.NextReconcileAt == nil {
			t.Fatalf("setup: got %s after %d attempts, next at %v, want needs_reconcile with a next attempt", m.Status, m.ReconcileAttempts, m.NextReconcileAt)
		}
		if got := e.events()["ch-1"]; got != scripthost.EventReserved {
			t.Errorf("event while reconciling: got %s, want reserved", got)
		}
		before := e.snapshot()
		code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "applied")
		if code != exitRefused || !strings.Contains(errOut, "needs_reconcile") {
			t.Errorf("resolve without --force: got exit %d %q, want %d naming needs_reconcile", code, errOut, exitRefused)
		}
		if after := e.snapshot(); after != before {
			t.Errorf("a refused resolution changed the ledger")
		}
		if code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "applied", "--force", "--by", "bob"); code != 0 {
			t.Fatalf("resolve --force: got exit %d: %s", code, errOut)
		}
		e.mustRun()
		if got := e.mutations()[0]; got.Status != scripthost.MutationApplied || got.ResolvedBy != "bob" {
			t.Errorf("mutation: got %s by %q, want applied by bob", got.Status, got.ResolvedBy)
		}
		if r := e.consumerRuns(); len(r) != 1 || r[0].Status != scripthost.StatusCommitted {
			t.Errorf("run after --force: got %+v, want one committed run", r)
		}
		if got := e.events()["ch-1"]; got != scripthost.EventConsumed {
			t.Errorf("event: got %s, want consumed", got)
		}
		if got := svc.Total(); got != 1 {
			t.Errorf("applies: got %d, want 1", got)
		}
	})
}

// TestResolveWhileHostRuns resolves mutations while a long-running host process polls
// the ledger, as an operator does: the host takes each run up again by itself, and stays
// up. The host polls every millisecond, so a resolution often lands between its reads of
// a run and of the run's mutation.
func TestResolveWhileHostRuns(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	bin := crashBinary(t)
	svc := fakesvc.New()
	defer svc.Close()
	// Every charge is applied and its answer lost, and the look-up cannot tell yet:
	// each mutation waits for a later attempt, and the test resolves it first.
	svc.SetDefault(fakesvc.ApplyDrop)
	svc.SetReconcile(fakesvc.ReconcileError)
	const n = 20
	e := newHTTPEnv(t, svc.URL(), "tools.json", n, "10s")

	host := exec.Command(bin, "--db", e.db, "run", e.wf, "--tools", e.tools, "--workspace", e.dir, "--poll", "1ms")
	host.Env = append(os.Environ(), tokenEnv+"="+e2eToken)
	var out lockedBuffer
	host.Stdout, host.Stderr = &out, &out
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	var hostErr error
	exited := make(chan struct{})
	go func() { hostErr = host.Wait(); close(exited) }()
	defer func() {
		_ = host.Process.Signal(syscall.SIGTERM)
		<-exited
		if hostErr != nil && !t.Failed() {
			t.Errorf("host: %v\n%s", hostErr, out.String())
		}
	}()

	resolved := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for len(resolved) < n {
		select {
		case <-exited:
			t.Fatalf("the host exited after %d resolutions: %v\n%s", len(resolved), hostErr, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d charges reached needs_reconcile within 60s:\n%s", len(resolved), n, out.String())
		}
		if _, err := os.Stat(e.db); err != nil {
			time.Sleep(10 * time.Millisecond) // the host has not created the ledger yet
			continue
		}
		for _, m := range e.mutations() {
			if m.Status == scripthost.MutationNeedsReconcile && !resolved[m.ID] {
				result := fmt.Sprintf(`{"id":"obj_%d"}`, len(resolved)+1)
				if code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "applied", "--force", "--result", result); code != 0 {
					t.Fatalf("resolve while the host runs: got exit %d: %s", code, errOut)
				}
				resolved[m.ID] = true
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	for {
		evs := e.events()
		consumed := 0
		for _, st := range evs {
			if st == scripthost.EventConsumed {
				consumed++
			}
		}
		if consumed == n {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the host exited: %v\n%s", hostErr, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d of %d events consumed within 60s:\n%s", consumed, n, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, m := range e.mutations() {
		if m.Status != scripthost.MutationApplied || svc.Applies(m.IdempotencyKey) != 1 {
			t.Errorf("mutation %s: got %s with %d applies, want applied once", m.ID, m.Status, svc.Applies(m.IdempotencyKey))
		}
	}
	if got := svc.Total(); got != n {
		t.Errorf("applies: got %d, want %d", got, n)
	}
}

// slowLookupService applies every charge and drops the connection; its reconcile
// look-ups answer 500 until one is held: that one waits for release, then says applied.
type slowLookupService struct {
	srv     *httptest.Server
	mu      sync.Mutex
	applies int
	hold    bool
	held    chan struct{} // closed when the held look-up has arrived
	release chan struct{}
}

func newSlowLookupService(t *testing.T) *slowLookupService {
	s := &slowLookupService{held: make(chan struct{}), release: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.mu.Lock()
			s.applies++
			s.mu.Unlock()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		s.mu.Lock()
		hold := s.hold
		s.hold = false
		s.mu.Unlock()
		if !hold {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		close(s.held)
		<-s.release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"obj_1"}`)
	}))
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		s.srv.Close()
	})
	return s
}

// TestResolveRacesReconcile resolves a needs_reconcile mutation with --force while the
// running host is in the middle of a reconcile look-up for it. The person's answer
// stands; the host takes the late answer in its stride and goes on running.
func TestResolveRacesReconcile(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	bin := crashBinary(t)
	svc := newSlowLookupService(t)
	e := newHTTPEnv(t, svc.srv.URL, "tools.json", 1, "10s")
	e.mustRun()
	m := e.mutations()[0]
	if m.Status != scripthost.MutationNeedsReconcile {
		t.Fatalf("setup: got %s, want needs_reconcile", m.Status)
	}
	svc.mu.Lock()
	svc.hold = true
	svc.mu.Unlock()

	host := exec.Command(bin, "--db", e.db, "run", e.wf, "--tools", e.tools, "--workspace", e.dir, "--poll", "20ms")
	host.Env = append(os.Environ(), tokenEnv+"="+e2eToken)
	var out lockedBuffer
	host.Stdout, host.Stderr = &out, &out
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	var hostErr error
	exited := make(chan struct{})
	go func() { hostErr = host.Wait(); close(exited) }()
	defer func() {
		_ = host.Process.Signal(syscall.SIGTERM)
		<-exited
	}()

	select {
	case <-svc.held:
	case <-exited:
		t.Fatalf("host exited before its reconcile attempt: %v\n%s", hostErr, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no reconcile attempt within 30s:\n%s", out.String())
	}
	if code, _, errOut := cli(t, "", "--db", e.db, "resolve", m.ID, "--as", "skipped", "--force", "--by", "carol"); code != 0 {
		t.Fatalf("resolve --force: got exit %d: %s", code, errOut)
	}
	close(svc.release)

	deadline := time.Now().Add(30 * time.Second)
	for {
		if r := e.consumerRuns(); r[0].Status == scripthost.StatusCommitted {
			break
		}
		select {
		case <-exited:
			t.Fatalf("the host exited after the late reconcile answer: %v\n%s", hostErr, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("run not committed 30s after the resolution:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := e.mutations()[0]; got.Status != scripthost.MutationSkipped || got.ResolvedBy != "carol" {
		t.Errorf("mutation: got %s by %q, want skipped by carol (the person's answer stands)", got.Status, got.ResolvedBy)
	}
	if got := e.events()["ch-1"]; got != scripthost.EventSkipped {
		t.Errorf("event: got %s, want skipped", got)
	}
	select {
	case <-exited:
		t.Errorf("the host exited: %v\n%s", hostErr, out.String())
	case <-time.After(300 * time.Millisecond):
	}
}

// lockedBuffer collects a running child's output; the test may read it meanwhile.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
