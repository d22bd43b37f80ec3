package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// An embedder registers its own Go tool and runs a workflow that calls it. The tool
// is a mutation (it declares no ReadOnly predicate), so the ledger records it before
// it runs and hands it an idempotency key.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "scripthost-example-")
	defer os.RemoveAll(dir)

	// HostLock: this process is the one host that drives the file (as scripthost run).
	store, err := sqlite.Open(ctx, filepath.Join(dir, "app.db"), sqlite.Options{HostLock: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	h, err := host.New(ctx, store, host.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close(ctx)

	err = h.RegisterTool(&hostfuncs.Tool{
		Namespace:   "Mail",
		Method:      "send",
		InputSchema: json.RawMessage(`{"type":"object","required":["to"],"properties":{"to":{"type":"string"}}}`),
		Execute: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			var msg struct{ To string }
			_ = json.Unmarshal(in, &msg)
			fmt.Println("sending to", msg.To, "with a key:", hostfuncs.IdempotencyKey(ctx) != "")
			return json.RawMessage(`{"sent":true}`), nil
		},
		// Asked when the outcome of a send is unknown (a timeout, a crash): did the
		// service accept a message with m.IdempotencyKey? Without a Reconcile such a
		// mutation waits for a person.
		Reconcile: func(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	wf := filepath.Join(dir, "welcome.js")
	_ = os.WriteFile(wf, []byte(`export default {
  topics: ['signups'],
  consumers: { welcome: { subscribe: ['signups'],
    async prepare() {
      const [e] = await Topics.peek({ topic: 'signups', limit: 1 });
      return e ? { reservations: [{ topic: 'signups', ids: [e.id] }], data: e.payload } : null;
    },
    async mutate(user) { if (user) await Mail.send({ to: user.email }); },
    next(user, result) { return { last: user && user.email, status: result.status }; },
  } },
};`), 0o644)
	if _, err := h.LoadWorkflow(ctx, wf); err != nil {
		log.Fatal(err)
	}
	if _, err := store.Publish(ctx, ledger.NewEvent{Workflow: "welcome", Topic: "signups", MessageID: "u1",
		Payload: json.RawMessage(`{"email":"ada@example.com"}`)}); err != nil {
		log.Fatal(err)
	}
	if err := h.RunOnce(ctx); err != nil {
		log.Fatal(err)
	}
	state, _ := store.HandlerState(ctx, "welcome", "welcome")
	fmt.Println(string(state.State))
	// Output:
	// sending to ada@example.com with a key: true
	// {"last":"ada@example.com","status":"applied"}
}
