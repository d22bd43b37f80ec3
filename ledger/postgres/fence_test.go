package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestWritesFencedByLease: a write made under a lease (ledger.WithFence) is refused
// with ErrLeaseLost, nothing of it written, once the lease is no longer the holder's
// however that came about (taken over, claimed again, expired, released, or never
// the holder's), on every path a write takes: one statement of its own, a
// transaction whose BEGIN goes with its write, and a transaction of statements
// sent one by one. The same writes under the lease still held go through.
func TestWritesFencedByLease(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url, postgres.Options{})
	other := open(t, url, postgres.Options{})
	const wf = "fenced"

	// What each write works on, made without a fence.
	emitting := func(t *testing.T, n int) scripthost.Run {
		t.Helper()
		id := s.NewID()
		msg := fmt.Sprintf("e-%d", n)
		if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: msg, Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		nr := ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer, ID: id,
			Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Data: json.RawMessage(`1`), Mutate: true,
				Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{msg}}}}}
		m, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: id, Run: &nr, Namespace: "Shop", Method: "ship",
			Params: json.RawMessage(`{}`), InputHash: "h-" + msg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		r, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	n := 0
	// Each write is set up without a fence, then made (write) under one.
	type write func(ctx context.Context) error
	writes := []struct {
		name  string
		setUp func(t *testing.T) write
	}{
		{"a run created (one statement)", func(t *testing.T) write {
			return func(ctx context.Context) error {
				_, err := s.CreateRun(ctx, ledger.NewRun{Workflow: wf, Version: 1, Handler: "poll", Kind: scripthost.KindProducer})
				return err
			}
		}},
		{"a run created with its in-flight mutation (BEGIN with the write)", func(t *testing.T) write {
			n++
			msg := fmt.Sprintf("m-%d", n)
			if _, err := s.Publish(ctx, ledger.NewEvent{Workflow: wf, Topic: "in", MessageID: msg, Payload: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) error {
				id := s.NewID()
				nr := ledger.NewRun{Workflow: wf, Version: 1, Handler: "ship", Kind: scripthost.KindConsumer, ID: id,
					Start: scripthost.RunPreparing, Prepared: &ledger.PrepareResult{Data: json.RawMessage(`1`), Mutate: true,
						Reservations: []scripthost.Reservation{{Topic: "in", IDs: []string{msg}}}}}
				_, err := s.BeginMutation(ctx, ledger.NewMutation{RunID: id, Run: &nr, Namespace: "Shop", Method: "ship",
					Params: json.RawMessage(`{}`), InputHash: "h-" + msg})
				return err
			}
		}},
		{"a consumer run committed (one statement, no wait for the flush)", func(t *testing.T) write {
			n++
			r := emitting(t, n)
			return func(ctx context.Context) error {
				_, err := s.CommitConsumer(ctx, r.ID, ledger.Commit{State: json.RawMessage(`{"n":1}`)})
				return err
			}
		}},
		{"events published", func(t *testing.T) write {
			n++
			msg := fmt.Sprintf("p-%d", n)
			return func(ctx context.Context) error {
				_, err := s.Publish(ctx, ledger.NewEvent{Workflow: wf, Topic: "out", MessageID: msg, Payload: json.RawMessage(`{}`)})
				return err
			}
		}},
		{"a schedule set (statements sent one by one)", func(t *testing.T) write {
			n++
			at := time.Unix(int64(1e9+n), 0)
			return func(ctx context.Context) error {
				return s.SetSchedule(ctx, ledger.Schedule{Workflow: wf, Producer: "poll", NextRunAt: at})
			}
		}},
	}

	lease := func(t *testing.T, owner string, ttl time.Duration) ledger.Lease {
		t.Helper()
		l, ok, err := s.ClaimLease(ctx, wf, owner, ttl)
		if err != nil || !ok {
			t.Fatalf("claim by %s: got ok=%v err=%v", owner, ok, err)
		}
		return l
	}
	expired := func(t *testing.T) ledger.Lease {
		l := lease(t, "host-a", time.Millisecond)
		time.Sleep(20 * time.Millisecond)
		return l
	}
	lost := []struct {
		name  string
		fence func(t *testing.T) ledger.Lease // the lease written under, no longer held
	}{
		{"taken over by another host", func(t *testing.T) ledger.Lease {
			l := expired(t)
			if _, ok, err := other.ClaimLease(ctx, wf, "host-b", time.Minute); err != nil || !ok {
				t.Fatalf("takeover: ok=%v err=%v", ok, err)
			}
			return l
		}},
		{"claimed again by its holder", func(t *testing.T) ledger.Lease {
			l := expired(t)
			lease(t, "host-a", time.Minute)
			return l
		}},
		{"expired, claimed by nobody", expired},
		{"released", func(t *testing.T) ledger.Lease {
			l := lease(t, "host-a", time.Minute)
			if _, err := s.ReleaseLease(ctx, l); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"held under another owner's name", func(t *testing.T) ledger.Lease {
			l := lease(t, "host-a", time.Minute)
			l.Owner = "host-A"
			return l
		}},
		{"held under an older token", func(t *testing.T) ledger.Lease {
			l := lease(t, "host-a", time.Minute)
			l.Token--
			return l
		}},
	}
	release := func(t *testing.T) {
		t.Helper()
		for _, l := range leasesOf(t, s, wf) {
			if l.Owner != "" {
				if _, err := s.ReleaseLease(ctx, l); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, lc := range lost {
		for _, w := range writes {
			t.Run(lc.name+"/"+w.name, func(t *testing.T) {
				release(t)
				write := w.setUp(t)
				fence := lc.fence(t)
				before := ledgerDump(t, s, wf)
				err := write(ledger.WithFence(ctx, fence))
				if !errors.Is(err, ledger.ErrLeaseLost) {
					t.Fatalf("got %v, want ErrLeaseLost", err)
				}
				if after := ledgerDump(t, s, wf); after != before {
					t.Errorf("a refused write changed the ledger:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
	// A lease operation is never fenced: a host whose context still carries a lost
	// lease's fence claims, renews and gives back leases as ever.
	t.Run("lease operations", func(t *testing.T) {
		release(t)
		stale := ledger.WithFence(ctx, expired(t))
		l, ok, err := other.ClaimLease(stale, wf, "host-b", time.Minute)
		if err != nil || !ok {
			t.Fatalf("claim under a lost lease's fence: ok=%v err=%v", ok, err)
		}
		if l, err = other.RenewLease(stale, l, time.Minute); err != nil {
			t.Fatalf("renew under a lost lease's fence: %v", err)
		}
		if _, err := other.ReleaseLease(stale, l); err != nil {
			t.Fatalf("release under a lost lease's fence: %v", err)
		}
	})
	for _, w := range writes {
		t.Run("held/"+w.name, func(t *testing.T) {
			release(t)
			write := w.setUp(t)
			fence := lease(t, "host-a", time.Minute)
			if err := write(ledger.WithFence(ctx, fence)); err != nil {
				t.Fatalf("under the lease held: %v", err)
			}
		})
	}
}

func leasesOf(t *testing.T, s *postgres.Store, workflow string) []ledger.Lease {
	t.Helper()
	ls, err := s.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Lease
	for _, l := range ls {
		if l.Workflow == workflow {
			out = append(out, l)
		}
	}
	return out
}

// ledgerDump is the workflow's runs, events, mutations, states and schedule as text:
// equal dumps, an unchanged ledger.
func ledgerDump(t *testing.T, s *postgres.Store, workflow string) string {
	t.Helper()
	ctx := context.Background()
	runs, err := s.Runs(ctx, ledger.RunFilter{Workflow: workflow})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, ledger.EventFilter{Workflow: workflow})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Mutations(ctx, ledger.MutationFilter{Workflow: workflow})
	if err != nil {
		t.Fatal(err)
	}
	var states []ledger.HandlerState
	for _, h := range []string{"ship", "poll"} {
		hs, err := s.HandlerState(ctx, workflow, h)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, hs)
	}
	sc, err := s.Schedule(ctx, workflow, "poll")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal([]any{runs, evs, ms, states, sc})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
