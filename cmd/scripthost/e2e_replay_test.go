package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// TestHTTPReplayReconcile runs the charges workflow through the CLI with a tool that
// reconciles by replay, against the fake service keeping Idempotency-Keys: an answer
// lost after the apply is recovered by sending the charge again (one apply); a key
// still under way is tried again later, and applied once the first request finishes;
// a key the service holds for other parameters pauses the run for a person.
func TestHTTPReplayReconcile(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	newSvc := func(t *testing.T, b ...fakesvc.Behavior) (*fakesvc.Server, *httpEnv) {
		svc := fakesvc.New()
		t.Cleanup(svc.Close)
		svc.SetDedupe(true)
		svc.Next(b...)
		return svc, newHTTPEnv(t, svc.URL(), "tools-replay.json", 1, "400ms")
	}
	// sent checks that every charge request was the same form body with the same key.
	sent := func(t *testing.T, svc *fakesvc.Server, key string, n int) {
		t.Helper()
		var posts []fakesvc.Request
		for _, r := range svc.Requests() {
			if r.Method == http.MethodPost {
				posts = append(posts, r)
			}
		}
		if len(posts) != n {
			t.Fatalf("got %d charge requests, want %d (the first and its replays)", len(posts), n)
		}
		for _, r := range posts {
			if r.Path != "/v1/charges/ch-1" || string(r.Body) != "amount=100" || r.Header.Get("Idempotency-Key") != key ||
				r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
				t.Errorf("request: got %s %q %q key %q, want /v1/charges/ch-1 amount=100 as a form with key %q",
					r.Path, r.Body, r.Header.Get("Content-Type"), r.Header.Get("Idempotency-Key"), key)
			}
		}
	}

	t.Run("apply then timeout", func(t *testing.T) {
		svc, e := newSvc(t, fakesvc.ApplyTimeout)
		e.mustRun()
		e.checkRow(t, svc, matrixRow{scripthost.MutationApplied, scripthost.StatusCommitted, scripthost.EventConsumed, 1})
		m := e.mutations()[0]
		if chargeField(t, m.Result, "id") != "obj_1" {
			t.Errorf("result: got %s, want the service's stored answer obj_1", m.Result)
		}
		sent(t, svc, m.IdempotencyKey, 2)
		before := e.snapshot()
		e.mustRun()
		if e.snapshot() != before || svc.Total() != 1 {
			t.Errorf("a second run changed the ledger or the service")
		}
	})

	t.Run("409 in progress", func(t *testing.T) {
		svc, e := newSvc(t, fakesvc.Hold)
		e.mustRun()
		ms := e.mutations()
		if len(ms) != 1 || ms[0].Status != scripthost.MutationNeedsReconcile || !strings.Contains(ms[0].Error, "HTTP 409") {
			t.Fatalf("got %+v, want one mutation needing reconcile after a 409", ms)
		}
		if got := e.events()["ch-1"]; got != scripthost.EventReserved || svc.Total() != 0 {
			t.Fatalf("event %s with %d applies, want reserved and none yet", got, svc.Total())
		}
		// The first request finishes; the next reconcile, when due, gets its answer.
		svc.Release()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := svc.WaitTotal(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if next := ms[0].NextReconcileAt; next != nil {
			time.Sleep(time.Until(*next))
		}
		e.mustRun()
		e.checkRow(t, svc, matrixRow{scripthost.MutationApplied, scripthost.StatusCommitted, scripthost.EventConsumed, 1})
		sent(t, svc, ms[0].IdempotencyKey, 3)
	})

	t.Run("422 key reuse", func(t *testing.T) {
		svc, e := newSvc(t, fakesvc.ApplyTimeout, fakesvc.KeyReused)
		e.mustRun()
		e.checkRow(t, svc, matrixRow{scripthost.MutationIndeterminate, scripthost.StatusPausedReconciliation, scripthost.EventReserved, 1})
		if m := e.mutations()[0]; !strings.Contains(m.Error, "other parameters") {
			t.Errorf("error: got %q, want it to say the key was used with other parameters", m.Error)
		}
		sent(t, svc, e.mutations()[0].IdempotencyKey, 2)
		before := e.snapshot()
		e.mustRun()
		if e.snapshot() != before || svc.Total() != 1 {
			t.Errorf("a second run changed the ledger or the service")
		}
	})
}
