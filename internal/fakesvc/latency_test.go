package fakesvc

import (
	"context"
	"testing"
	"time"
)

// TestLatency checks both windows SetLatency opens: a client that gives up before the
// apply leaves nothing applied; one that gives up after it loses the answer of an
// applied request.
func TestLatency(t *testing.T) {
	const d = 300 * time.Millisecond
	tests := []struct {
		name    string
		timeout time.Duration
		answer  bool
		applies int
	}{
		{"patient client", 5 * time.Second, true, 1},
		{"gives up before the apply", d / 10, false, 0},
		{"gives up after the apply", d + d/2, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			defer s.Close()
			s.SetLatency(d)
			status, err := post(t, s.URL(), "k", tc.timeout)
			if got := err == nil && status == 200; got != tc.answer {
				t.Fatalf("answered: got %v (status %d, %v), want %v", got, status, err, tc.answer)
			}
			if tc.applies == 1 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := s.WaitTotal(ctx, 1); err != nil {
					t.Fatal(err)
				}
			} else {
				// Long enough for a request that was going to apply to have done so.
				time.Sleep(3 * d)
			}
			if got := s.Applies("k"); got != tc.applies {
				t.Errorf("applies: got %d, want %d", got, tc.applies)
			}
		})
	}
}
