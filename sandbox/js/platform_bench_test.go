package js_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// webHandler is benchHandler plus the web platform: it builds a URL, encodes text
// and hashes it with crypto.subtle.
const webHandler = `async function (state) {
  let n = 0
  for (const item of state.items) n += item.size
  const url = new URL('/items?count=' + state.items.length, 'https://api.example')
  const body = new TextEncoder().encode(url.href + n)
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', body))
  return { count: state.items.length, total: n, url: url.href, digest: digest[0] }
}`

// BenchmarkWebPlatform runs one prepare phase twice in one run: "unused" is
// BenchmarkInvokePhase's handler, which reads no web global (so it pays only for the
// lazy install), "used" builds a URL, encodes text and hashes it with crypto.subtle.
func BenchmarkWebPlatform(b *testing.B) {
	state := benchState(b)
	eng := js.New(js.Options{})
	for _, bc := range []struct{ name, handler string }{{"unused", benchHandler}, {"used", webHandler}} {
		p := load(b, eng, "wf.js", "export default { consumers: { c: { prepare: "+bc.handler+" } } }")
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "consumers.c.prepare",
					Phase: scripthost.PhasePrepare, Globals: sandbox.Globals{State: state},
					Args: []json.RawMessage{state}, Tools: sandboxtest.NewTools()})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
