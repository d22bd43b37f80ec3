package js_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// callerTools records where in the script each call was made (sandbox.Caller).
type callerTools struct {
	sandboxtest.Tools
	where []sandbox.Location
}

func (c *callerTools) Call(ctx context.Context, ns, method string, input json.RawMessage) (json.RawMessage, error) {
	l, _ := sandbox.Caller(ctx)
	c.where = append(c.where, l)
	return c.Tools.Call(ctx, ns, method, input)
}

// A tool call's context tells the tool the script's file, line and column of the
// call: the TypeScript source's (through its source map), also from a helper function
// and after an await.
func TestToolCallerLocation(t *testing.T) {
	p := load(t, js.New(js.Options{}), "wf.ts", `interface In { n: number }

function send(x: In) {
  return Echo.say({ n: x.n })
}

export default { f: { async h(x: In) {
  await send(x)
  const y: number = x.n + 1
  await Echo.say({ n: y })
} } }
`)
	tools := &callerTools{}
	if _, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: tools,
		Args: []json.RawMessage{json.RawMessage(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	want := []int{4, 10}
	if len(tools.where) != len(want) {
		t.Fatalf("got %d calls %v, want %d", len(tools.where), tools.where, len(want))
	}
	for i, l := range tools.where {
		if l.File != "wf.ts" || l.Line != want[i] || l.Column < 1 {
			t.Errorf("call %d: got %s, want wf.ts:%d:col", i, l, want[i])
		}
	}
}
