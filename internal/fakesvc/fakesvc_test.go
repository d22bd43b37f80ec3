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
