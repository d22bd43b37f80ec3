package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// listening subscribes to workflows on s and returns their channels once the listener
// is connected (its first wake-up, sent to every subscriber after LISTEN).
func listening(t testing.TB, s *postgres.Store, workflows ...string) []<-chan struct{} {
	t.Helper()
	chans := make([]<-chan struct{}, len(workflows))
	for i, wf := range workflows {
		ch, stop := s.Wakeups(wf)
		t.Cleanup(stop)
		chans[i] = ch
	}
	for i, ch := range chans {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("the listener did not connect: no first wake-up for %s", workflows[i])
		}
	}
	return chans
}

// received reports whether ch holds a wake-up, without waiting.
func received(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestReleaseWakeups: a lease released without another host asking for it wakes
// nobody (an idle holder would otherwise be woken by its own release after each pass
// and poll the database without pause), and one another host asked for wakes the
// waiting host. PostgreSQL delivers notifications in commit order, so the wake-up for
// an event published after the release shows that none came for the release.
func TestReleaseWakeups(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := open(t, url, postgres.Options{}), open(t, url, postgres.Options{})
	chans := listening(t, b, "quiet", "news")
	quiet, news := chans[0], chans[1]

	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no wake-up on the other host", what)
		}
	}

	l, ok, err := a.ClaimLease(ctx, "quiet", "host-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim: ok=%v err=%v", ok, err)
	}
	if wanted, err := a.ReleaseLease(ctx, l); err != nil || wanted {
		t.Fatalf("release: wanted=%v err=%v, want not wanted", wanted, err)
	}
	if _, err := a.Publish(ctx, ledger.NewEvent{Workflow: "news", Topic: "t", MessageID: "1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	wait("publish", news)
	if received(quiet) {
		t.Error("a release nobody waited for woke the workflow's hosts")
	}

	l, ok, err = a.ClaimLease(ctx, "quiet", "host-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim again: ok=%v err=%v", ok, err)
	}
	if _, ok, err := b.ClaimLease(ctx, "quiet", "host-b", time.Minute); err != nil || ok {
		t.Fatalf("claim by b while a holds it: ok=%v err=%v, want refused", ok, err)
	}
	if err := b.AskLease(ctx, "quiet", "host-b"); err != nil {
		t.Fatal(err)
	}
	if wanted, err := a.ReleaseLease(ctx, l); err != nil || !wanted {
		t.Fatalf("release: wanted=%v err=%v, want wanted", wanted, err)
	}
	wait("release of a lease b asked for", quiet)
}

// BenchmarkWakeupLatency measures how long an event published through one host's
// store takes to wake an idle subscriber on another host (its own pool and listener
// connection): from Publish's start to the wake-up, so the publish's own commit is
// included. It reports the median and the 99th percentile.
func BenchmarkWakeupLatency(b *testing.B) {
	ctx := context.Background()
	url := pgtest.URL(b)
	pub, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	idle, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer idle.Close()
	ch := listening(b, idle, "wf")[0]
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := pub.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "t", MessageID: fmt.Sprint(i),
			Payload: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			b.Fatalf("event %d: no wake-up", i)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
