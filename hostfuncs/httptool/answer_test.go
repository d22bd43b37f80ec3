package httptool_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// scripted answers each request with the next of its answers (the last one repeats)
// and counts requests.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	n       int
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func newScripted(t *testing.T, answers ...answer) (*scripted, string) {
	s := &scripted{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		a := s.answers[min(s.n, len(s.answers)-1)]
		s.n++
		s.mu.Unlock()
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestErrorBodies: a JSON error body gives the tool error its code and message, in
// Stripe's shape, RFC 9457's, and the common {"error": "..."}; anything else is shown
// as its start.
func TestErrorBodies(t *testing.T) {
	tests := []struct {
		name  string
		a     answer
		class scripthost.ErrorClass
		code  string
		inMsg string
	}{
		{"stripe card error", answer{402, nil, `{"error":{"type":"card_error","code":"card_declined","message":"Your card was declined.","param":"source"}}`},
			scripthost.ClassLogic, "card_declined", "HTTP 402: card_declined: Your card was declined. (param source)"},
		{"stripe without code", answer{400, nil, `{"error":{"type":"invalid_request_error","message":"Received unknown parameter: colour"}}`},
			scripthost.ClassLogic, "invalid_request_error", "invalid_request_error: Received unknown parameter: colour"},
		{"problem json", answer{409, map[string]string{"Content-Type": "application/problem+json"},
			`{"type":"https://example.com/probs/out-of-credit","title":"You do not have enough credit.","detail":"Your balance is 30, but that costs 50.","status":409}`},
			scripthost.ClassLogic, "https://example.com/probs/out-of-credit", "You do not have enough credit.: Your balance is 30, but that costs 50."},
		{"problem about:blank", answer{404, nil, `{"type":"about:blank","title":"Not Found"}`}, scripthost.ClassLogic, "", "HTTP 404: Not Found"},
		{"error string", answer{500, nil, `{"error":"database is down","code":"db_down"}`}, scripthost.ClassNetwork, "db_down", "HTTP 500: db_down: database is down"},
		{"message", answer{401, nil, `{"message":"Bad credentials"}`}, scripthost.ClassAuth, "", "HTTP 401: Bad credentials"},
		{"not JSON", answer{400, nil, "<html>nope</html>"}, scripthost.ClassLogic, "", "HTTP 400: <html>nope</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := newScripted(t, tt.a)
			tool := loadTools(t, base, "- {namespace: E, method: m, url: '%URL%/x'}\n")["E.m"]
			// Without a key: a 409 here is the service refusing, not a key under way.
			_, err := tool.Execute(context.Background(), json.RawMessage(`{}`))
			var e *scripthost.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want a *scripthost.Error", err)
			}
			if e.Class != tt.class || e.Code != tt.code || !strings.Contains(e.Message, tt.inMsg) {
				t.Errorf("got class %s code %q message %q, want %s %q containing %q", e.Class, e.Code, e.Message, tt.class, tt.code, tt.inMsg)
			}
		})
	}
}

// TestConflictOnKeyedMutation: a 409 to a mutation carrying a key means a request with
// the key is under way, so the outcome is unknown: a network error, not a refusal.
func TestConflictOnKeyedMutation(t *testing.T) {
	_, base := newScripted(t, answer{409, nil, `{"error":{"type":"idempotency_error","message":"in progress"}}`})
	tool := loadTools(t, base, "- {namespace: E, method: m, url: '%URL%/x'}\n")["E.m"]
	_, err := tool.Execute(hostfuncs.WithIdempotencyKey(context.Background(), "k"), json.RawMessage(`{}`))
	if !scripthost.IsNetwork(err) || !strings.Contains(err.Error(), "idempotency_error: in progress") {
		t.Errorf("got %v, want a network error with the service's message", err)
	}
}

// TestRetryAfterOnReads: a read answered 429 or 503 with a Retry-After that fits the
// tool's timeout waits and asks again (at most twice more); a longer one, or one on a
// mutation, is returned at once with the wait in the message.
func TestRetryAfterOnReads(t *testing.T) {
	const decl = `
- {namespace: R, method: get, read_only: true, url: '%URL%/r', timeout: 5s}
- {namespace: R, method: post, url: '%URL%/r', timeout: 5s}
`
	ok := answer{200, nil, `{"ok":true}`}
	busy := func(status int, after string) answer {
		return answer{status, map[string]string{"Retry-After": after}, `{"error":"busy"}`}
	}
	tests := []struct {
		name     string
		tool     string
		answers  []answer
		requests int
		wantErr  string
	}{
		{"429 then ok", "R.get", []answer{busy(429, "0"), ok}, 2, ""},
		{"503 twice then ok", "R.get", []answer{busy(503, "0"), busy(503, "0"), ok}, 3, ""},
		{"gives up after three", "R.get", []answer{busy(503, "0")}, 3, "HTTP 503: busy (retry after 0s)"},
		{"past date is now", "R.get", []answer{busy(429, "Mon, 02 Jan 2006 15:04:05 GMT"), ok}, 2, ""},
		{"longer than the timeout", "R.get", []answer{busy(429, "3600"), ok}, 1, "HTTP 429: busy (retry after 1h0m0s)"},
		{"500 is not asked to wait", "R.get", []answer{busy(500, "0"), ok}, 1, "HTTP 500"},
		{"mutations are not re-sent", "R.post", []answer{busy(429, "0"), ok}, 1, "HTTP 429: busy (retry after 0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, base := newScripted(t, tt.answers...)
			tool := loadTools(t, base, decl)[tt.tool]
			out, err := tool.Execute(hostfuncs.WithIdempotencyKey(context.Background(), "k"), json.RawMessage(`{}`))
			switch {
			case tt.wantErr == "" && (err != nil || string(out) != `{"ok":true}`):
				t.Errorf("got %s, %v, want the answer after the wait", out, err)
			case tt.wantErr != "" && (!scripthost.IsNetwork(err) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want a network error containing %q", err, tt.wantErr)
			}
			if got := srv.count(); got != tt.requests {
				t.Errorf("requests: got %d, want %d", got, tt.requests)
			}
			// The wait travels with the error, for the first reconcile of a mutation.
			var busy *hostfuncs.RetryAfterError
			if hasWait := errors.As(err, &busy); hasWait != strings.Contains(tt.wantErr, "retry after") {
				t.Errorf("got %v with a wait %v, want one exactly when the service asked", err, hasWait)
			}
		})
	}
}

// TestRetryAfterOnReconcile: a look-up or a replay answered 429 or 503 with
// Retry-After says how long to wait before the next attempt.
func TestRetryAfterOnReconcile(t *testing.T) {
	for _, strategy := range []string{"{url: '%URL%/look?k={key}'}", "{strategy: replay}"} {
		for _, status := range []int{429, 503} {
			_, base := newScripted(t, answer{status, map[string]string{"Retry-After": "120"}, `{"error":"maintenance"}`})
			tool := loadTools(t, base, "- {namespace: L, method: m, url: '%URL%/x', reconcile: "+strategy+"}\n")["L.m"]
			rec, err := tool.Reconcile(context.Background(), scripthost.Mutation{IdempotencyKey: "k", Params: json.RawMessage(`{}`)})
			if err != nil || rec.Outcome != scripthost.ReconcileRetryLater || rec.RetryAfter != 2*time.Minute || !strings.Contains(rec.Reason, "maintenance") {
				t.Errorf("%s, HTTP %d: got %+v, %v, want retry later after 2m", strategy, status, rec, err)
			}
		}
	}
}

const replayDecl = `
- namespace: Pay
  method: charge
  url: "%URL%/v1/charges/{customer}"
  body: form
  timeout: 300ms
  reconcile: {strategy: replay}
`

// TestReplayReconcile: replay re-sends the mutation as it was first sent, key and all;
// the service's stored answer is applied without a second apply, a key under way is
// try-later, and a key the service holds for other parameters goes to a person.
func TestReplayReconcile(t *testing.T) {
	input := json.RawMessage(`{"customer":"cus_1","amount":2000,"metadata":{"order":"o1"}}`)
	tests := []struct {
		name   string
		first  fakesvc.Behavior
		replay fakesvc.Behavior // "" to let the service answer from its store
		want   scripthost.ReconcileOutcome
		reason string
	}{
		{"applied then timed out", fakesvc.ApplyTimeout, "", scripthost.ReconcileApplied, ""},
		{"applied then dropped", fakesvc.ApplyDrop, "", scripthost.ReconcileApplied, ""},
		{"still under way", fakesvc.Hold, "", scripthost.ReconcileRetryLater, "HTTP 409: idempotency_error: a request with this key is under way"},
		{"key reused", fakesvc.ApplyTimeout, fakesvc.KeyReused, scripthost.ReconcileIndeterminate, "HTTP 422: idempotency_error: this key was used with other parameters"},
		{"service down before applying", fakesvc.Fail5xx, fakesvc.Fail5xx, scripthost.ReconcileRetryLater, "HTTP 503"},
		{"never applied", fakesvc.Fail5xx, "", scripthost.ReconcileApplied, ""},
		{"stored refusal", fakesvc.ApplyTimeout, fakesvc.Fail4xx, scripthost.ReconcileIndeterminate, "other parameters"},
		{"refused now", fakesvc.ApplyTimeout, fakesvc.Forbidden, scripthost.ReconcileRetryLater, "HTTP 403"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := fakesvc.New()
			defer svc.Close()
			svc.SetDedupe(true)
			tool := loadTools(t, svc.URL(), replayDecl)["Pay.charge"]
			ctx := hostfuncs.WithIdempotencyKey(context.Background(), "key-1")
			svc.Next(tt.first)
			if tt.replay != "" {
				svc.Next(tt.replay)
			}
			if _, err := tool.Execute(ctx, input); !scripthost.IsNetwork(err) {
				t.Fatalf("first call: got %v, want an uncertain outcome", err)
			}
			rec, err := tool.Reconcile(ctx, scripthost.Mutation{IdempotencyKey: "key-1", Params: input})
			if err != nil || rec.Outcome != tt.want || !strings.Contains(rec.Reason, tt.reason) {
				t.Fatalf("got %s %q (%v), want %s containing %q", rec.Outcome, rec.Reason, err, tt.want, tt.reason)
			}
			reqs := svc.Requests()
			first, again := reqs[0], reqs[len(reqs)-1]
			if again.Method != first.Method || again.Path != first.Path || string(again.Body) != string(first.Body) ||
				again.Header.Get("Idempotency-Key") != "key-1" || first.Header.Get("Idempotency-Key") != "key-1" {
				t.Errorf("replay: got %s %s %q key %q, want the first request %s %s %q again with key-1",
					again.Method, again.Path, again.Body, again.Header.Get("Idempotency-Key"), first.Method, first.Path, first.Body)
			}
			if got := svc.Total(); got > 1 {
				t.Errorf("applies: got %d, want at most 1", got)
			}
			if tt.want == scripthost.ReconcileApplied && !strings.Contains(string(rec.Result), `"id":"obj_1"`) {
				t.Errorf("result: got %s, want the service's answer obj_1", rec.Result)
			}
			svc.Release()
		})
	}
	t.Run("redacted params", func(t *testing.T) {
		svc := fakesvc.New()
		defer svc.Close()
		tool := loadTools(t, svc.URL(), replayDecl)["Pay.charge"]
		rec, err := tool.Reconcile(context.Background(), scripthost.Mutation{IdempotencyKey: "k",
			Params: json.RawMessage(`{"customer":"c","amount":1,"metadata":{"token":"` + hostfuncs.Redacted + `"}}`)})
		if err != nil || rec.Outcome != scripthost.ReconcileIndeterminate || len(svc.Requests()) != 0 {
			t.Errorf("got %+v, %v with %d requests, want indeterminate without sending", rec, err, len(svc.Requests()))
		}
	})
}
