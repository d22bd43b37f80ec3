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
// and hashes it with crypto.subtle. Compare with BenchmarkInvokePhase, which runs the
// same phase without touching the platform: the difference is what using it costs,
// and BenchmarkInvokePhase against main is what installing it (lazily) costs.
const webHandler = `async function (state) {
  let n = 0
  for (const item of state.items) n += item.size
  const url = new URL('/items?count=' + state.items.length, 'https://api.example')
  const body = new TextEncoder().encode(url.href + n)
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', body))
  return { count: state.items.length, total: n, url: url.href, digest: digest[0] }
}`

// BenchmarkInvokePhaseWebPlatform is BenchmarkInvokePhase with a handler that uses
// URL, TextEncoder and crypto.subtle.
func BenchmarkInvokePhaseWebPlatform(b *testing.B) {
	state := benchState(b)
	p := load(b, js.New(js.Options{}), "wf.js", "export default { consumers: { c: { prepare: "+webHandler+" } } }")
	inv := sandbox.Invocation{Function: "consumers.c.prepare", Phase: scripthost.PhasePrepare,
		Globals: sandbox.Globals{State: state}, Args: []json.RawMessage{state}, Tools: sandboxtest.NewTools()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Invoke(context.Background(), inv); err != nil {
			b.Fatal(err)
		}
	}
}
