package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// TestLeases: a lease held by one host is refused to another, which is recorded as
// waiting for it once it asks for it (not by the refused claim); the holder learns so
// when it renews and when it releases, and the other host then
// claims it; an expired lease is taken over, and its former holder can neither renew
// nor release the new holder's lease.
func TestLeases(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := open(t, url, postgres.Options{}), open(t, url, postgres.Options{})

	la, ok, err := a.ClaimLease(ctx, "wf", "host-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim by a: got ok=%v err=%v, want the lease", ok, err)
	}
	if la, err = a.RenewLease(ctx, la, time.Minute); err != nil || la.Wanted {
		t.Fatalf("renew by a before anyone asked: got wanted=%v err=%v, want not wanted", la.Wanted, err)
	}
	if _, ok, err := b.ClaimLease(ctx, "wf", "host-b", time.Minute); err != nil || ok {
		t.Fatalf("claim by b while a holds it: got ok=%v err=%v, want refused", ok, err)
	}
	if la, err = a.RenewLease(ctx, la, time.Minute); err != nil || la.Wanted {
		t.Fatalf("renew by a after b's refused claim: got wanted=%v err=%v, want not wanted (b did not ask)", la.Wanted, err)
	}
	if err := b.AskLease(ctx, "wf", "host-b"); err != nil {
		t.Fatal(err)
	}
	if la, err = a.RenewLease(ctx, la, time.Minute); err != nil || !la.Wanted {
		t.Fatalf("renew by a: got wanted=%v err=%v, want wanted (b asked for it)", la.Wanted, err)
	}
	wanted, err := a.ReleaseLease(ctx, la)
	if err != nil || !wanted {
		t.Fatalf("release by a: got wanted=%v err=%v, want wanted (b asked for it)", wanted, err)
	}
	lb, ok, err := b.ClaimLease(ctx, "wf", "host-b", time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("claim by b after the release: got ok=%v err=%v", ok, err)
	}
	if lb.Token <= la.Token {
		t.Errorf("token: got %d after %d, want it to grow at every claim", lb.Token, la.Token)
	}
	if la.TakenFrom != "" || lb.TakenFrom != "" {
		t.Errorf("taken from: got %q and %q, want none for a fresh lease and one released", la.TakenFrom, lb.TakenFrom)
	}
	time.Sleep(20 * time.Millisecond) // b's lease of 1ms expires
	la2, ok, err := a.ClaimLease(ctx, "wf", "host-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim of an expired lease: got ok=%v err=%v, want it taken over", ok, err)
	}
	if la2.TakenFrom != "host-b" {
		t.Errorf("taken from: got %q, want host-b, whose lease expired unreleased", la2.TakenFrom)
	}
	if _, err := b.RenewLease(ctx, lb, time.Minute); !errors.Is(err, ledger.ErrLeaseLost) {
		t.Errorf("renew by the former holder: got %v, want ErrLeaseLost", err)
	}
	if _, err := b.ReleaseLease(ctx, lb); err != nil {
		t.Errorf("release by the former holder: got %v, want no error", err)
	}
	ls, err := a.Leases(ctx)
	if err != nil || len(ls) != 1 || ls[0].Owner != "host-a" || ls[0].Token != la2.Token {
		t.Errorf("leases: got %+v, %v; want host-a holding token %d", ls, err, la2.Token)
	}
}

// TestWakeups: a host waiting on a workflow hears of events another host publishes
// for it, and not of other workflows' events.
func TestWakeups(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a, b := open(t, url, postgres.Options{}), open(t, url, postgres.Options{})
	wake, stop := a.Wakeups("wf")
	defer stop()
	// The listener wakes everyone once it is connected: wait for that first.
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener never connected")
	}
	if _, err := b.Publish(ctx, ledger.NewEvent{Workflow: "other", Topic: "t", MessageID: "1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, ledger.NewEvent{Workflow: "wf", Topic: "t", MessageID: "1", Payload: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-wake:
	case <-time.After(30 * time.Second):
		t.Fatal("no wake-up after an event was published for the workflow")
	}
	select {
	case <-wake:
		t.Error("a second wake-up: the other workflow's event woke this one too")
	case <-time.After(200 * time.Millisecond):
	}
}
