package fakesvc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, key string, timeout time.Duration) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/charges", strings.NewReader(`{"amount":5}`))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

func TestBehaviors(t *testing.T) {
	tests := []struct {
		b          Behavior
		wantStatus int // 0: no answer
		wantErr    error
		applies    int
		lookup     int
	}{
		{Succeed, 200, nil, 1, 200},
		{Fail4xx, 422, nil, 0, 404},
		{Fail5xx, 503, nil, 0, 404},
		{Unauthorized, 401, nil, 0, 404},
		{Forbidden, 403, nil, 0, 404},
		{ApplyTimeout, 0, context.DeadlineExceeded, 1, 200},
		{ApplyDrop, 0, io.EOF, 1, 200},
	}
	for _, tt := range tests {
		t.Run(string(tt.b), func(t *testing.T) {
			s := New()
			defer s.Close()
			s.SetKey("k1", tt.b)
			status, err := post(t, s.URL(), "k1", 300*time.Millisecond)
			if tt.wantErr != nil {
				if err == nil || !errors.Is(err, tt.wantErr) {
					t.Errorf("got error %v, want %v", err, tt.wantErr)
				}
			} else if err != nil || status != tt.wantStatus {
				t.Errorf("got status %d (%v), want %d", status, err, tt.wantStatus)
			}
			if got := s.Applies("k1"); got != tt.applies {
				t.Errorf("got %d applies, want %d", got, tt.applies)
			}
			if got := get(t, s.URL()+"/charges?idempotency_key=k1"); got != tt.lookup {
				t.Errorf("lookup: got %d, want %d", got, tt.lookup)
			}
		})
	}
}

func TestQueueHeaderAndDedupe(t *testing.T) {
	s := New()
	defer s.Close()
	s.Next(Fail5xx)
	if st, _ := post(t, s.URL(), "a", time.Second); st != 503 {
		t.Errorf("queued: got %d, want 503", st)
	}
	if st, _ := post(t, s.URL(), "a", time.Second); st != 200 {
		t.Errorf("after queue: got %d, want 200", st)
	}
	post(t, s.URL(), "a", time.Second)
	if got := s.Applies("a"); got != 2 {
		t.Errorf("without dedupe: got %d applies, want 2", got)
	}
	s.SetDedupe(true)
	post(t, s.URL(), "a", time.Second)
	if got := s.Applies("a"); got != 2 {
		t.Errorf("with dedupe: got %d applies, want 2", got)
	}
	if got := s.Total(); got != 2 {
		t.Errorf("total: got %d, want 2", got)
	}
	for _, rb := range []struct {
		b    ReconcileBehavior
		want int
	}{{ReconcileError, 500}, {ReconcileNotFound, 404}, {ReconcileApplied, 200}} {
		s.SetReconcile(rb.b)
		if got := get(t, s.URL()+"/x?idempotency_key=zzz"); got != rb.want {
			t.Errorf("reconcile %s: got %d, want %d", rb.b, got, rb.want)
		}
	}
	if n := len(s.Requests()); n != 7 {
		t.Errorf("got %d requests, want 7", n)
	}
}

func TestWaitTotal(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetDefault(ApplyTimeout)
	go post(t, s.URL(), "w", 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitTotal(ctx, 1); err != nil {
		t.Fatalf("WaitTotal: %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if err := s.WaitTotal(short, 2); err == nil {
		t.Errorf("WaitTotal(2): got nil, want the context's error")
	}
}

// send posts body to path with key and returns the status, the body and whether the
// answer says it was replayed; a transport error is status 0.
func send(t *testing.T, url, path, key, body string, timeout time.Duration) (int, string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, strings.NewReader(body))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error(), false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Idempotent-Replayed") == "true"
}

// TestDedupeStoresAndReplaysPerKey: with dedupe on, a repeated request gets the stored
// answer without applying, another body or path under the key gets 422, a request
// while the first is under way gets 409, and a refusal leaves the key free.
func TestDedupeStoresAndReplaysPerKey(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetDedupe(true)
	st, first, replayed := send(t, s.URL(), "/charges", "k", `{"amount":5}`, time.Second)
	if st != 200 || replayed {
		t.Fatalf("first: got %d (replayed %v), want 200 applied", st, replayed)
	}
	st, again, replayed := send(t, s.URL(), "/charges", "k", `{"amount":5}`, time.Second)
	if st != 200 || again != first || !replayed {
		t.Errorf("repeat: got %d %s (replayed %v), want 200 with the stored %s", st, again, replayed, first)
	}
	for _, tc := range []struct{ path, body string }{{"/charges", `{"amount":6}`}, {"/refunds", `{"amount":5}`}} {
		st, body, _ := send(t, s.URL(), tc.path, "k", tc.body, time.Second)
		if st != 422 || !strings.Contains(body, "idempotency_error") {
			t.Errorf("reuse with %s %s: got %d %s, want 422 idempotency_error", tc.path, tc.body, st, body)
		}
	}
	if got := s.Applies("k"); got != 1 {
		t.Errorf("applies of k: got %d, want 1", got)
	}

	// Refused before applying: the key stays free.
	s.Next(Fail5xx)
	if st, _, _ := send(t, s.URL(), "/charges", "r", `{}`, time.Second); st != 503 {
		t.Errorf("refused: got %d, want 503", st)
	}
	if st, _, replayed := send(t, s.URL(), "/charges", "r", `{}`, time.Second); st != 200 || replayed || s.Applies("r") != 1 {
		t.Errorf("after a refusal: got %d (replayed %v, %d applies), want a fresh apply", st, replayed, s.Applies("r"))
	}

	// Held: under way until released, then stored.
	s.Next(Hold)
	if st, _, _ := send(t, s.URL(), "/charges", "h", `{"amount":7}`, 100*time.Millisecond); st != 0 {
		t.Fatalf("held: got %d, want no answer", st)
	}
	st, body, _ := send(t, s.URL(), "/charges", "h", `{"amount":7}`, time.Second)
	if st != 409 || !strings.Contains(body, "idempotency_error") {
		t.Errorf("while under way: got %d %s, want 409 idempotency_error", st, body)
	}
	s.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitTotal(ctx, 3); err != nil {
		t.Fatal(err)
	}
	st, _, replayed = send(t, s.URL(), "/charges", "h", `{"amount":7}`, time.Second)
	if st != 200 || !replayed || s.Applies("h") != 1 {
		t.Errorf("after release: got %d (replayed %v, %d applies), want the stored answer, one apply", st, replayed, s.Applies("h"))
	}

	s.Next(KeyReused)
	if st, _, _ := send(t, s.URL(), "/charges", "z", `{}`, time.Second); st != 422 || s.Applies("z") != 0 {
		t.Errorf("key_reused: got %d with %d applies, want 422 and none", st, s.Applies("z"))
	}
}
