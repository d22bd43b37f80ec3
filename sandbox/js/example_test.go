package js_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

func ExampleEngine() {
	eng := js.New(js.Options{})
	p, err := eng.Load(context.Background(), sandbox.Source{Name: "workflow.ts", Code: []byte(`
export default {
  topics: ['files'],
  consumers: { greet: { subscribe: ['files'],
    async prepare(state: { name: string }) {
      console.log('preparing', state.name)
      return await Echo.say({ text: 'hello ' + __state__.name })
    } } },
}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	def, _ := p.Definition(context.Background())
	fmt.Println(string(def))

	state := json.RawMessage(`{"name":"ada"}`)
	res, err := p.Invoke(context.Background(), sandbox.Invocation{
		Function: "consumers.greet.prepare",
		Globals:  sandbox.Globals{State: state},
		Args:     []json.RawMessage{state},
		Tools:    sandboxtest.NewTools(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Value), res.Console[0].Text, res.ToolCalls)
	// Output:
	// {"topics":["files"],"consumers":{"greet":{"subscribe":["files"],"prepare":"consumers.greet.prepare"}}}
	// {"text":"hello ada"} preparing ada 1
}
