package js_test

import (
	"testing"

	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// conformance holds this engine's module for every behaviour of the suite. Each
// module's handler is consumers.c.<behaviour>.
var conformance = map[string]string{
	sandboxtest.Definition: `export default {
  topics: ['in', 'out'],
  consumers: { c: { subscribe: ['in'], publishes: ['out'], prepare() { return 'prepared' } } },
}`,
	sandboxtest.EchoGlobals: `export default { consumers: { c: { h(...args) {
  return {
    state: typeof __state__ === 'undefined' ? null : __state__,
    prepared: typeof __prepared__ === 'undefined' ? null : __prepared__,
    mutationResult: typeof __mutationResult__ === 'undefined' ? null : __mutationResult__,
    args,
  }
} } } }`,
	sandboxtest.GlobalsReadOnly: `export default { consumers: { c: { h() {
  try { __state__ = 1 } catch (e) {}
  try { __state__.x = 'changed' } catch (e) {}
  try { delete __state__.a } catch (e) {}
  try { __state__.list.push(2) } catch (e) {}
  return __state__
} } } }`,
	sandboxtest.CallTool: `export default { consumers: { c: { async h() {
  return await Echo.say({ text: 'hi' })
} } } }`,
	sandboxtest.ToolErrorClass: `export default { consumers: { c: { async h() {
  await Fail.network({})
} } } }`,
	sandboxtest.CatchToolError: `export default { consumers: { c: { async h() {
  try { await Fail.network({}) } catch (e) { return { class: e.class, code: e.code } }
} } } }`,
	sandboxtest.Terminate: `export default { consumers: { c: { async h() {
  try { await Fail.terminate({}) } catch (e) { return 'caught' }
  return 'caught'
} } } }`,
	sandboxtest.ToolPanic: `export default { consumers: { c: { async h() {
  await Fail.panic({})
} } } }`,
	sandboxtest.ToolFlood: `export default { consumers: { c: { async h() {
  for (let i = 0; ; i++) await Echo.say({ i })
} } } }`,
	sandboxtest.Throw: `export default { consumers: { c: { h() {
  throw new Error('boom')
} } } }`,
	sandboxtest.Console: `export default { consumers: { c: { h() {
  console.log('one'); console.warn('two'); console.error('three')
  return null
} } } }`,
	sandboxtest.ConsoleFlood: `export default { consumers: { c: { h() {
  for (let i = 0; i < 1000; i++) console.log('x'.repeat(100))
  return 'done'
} } } }`,
	sandboxtest.EndlessLoop: `export default { consumers: { c: { h() {
  for (;;) {}
} } } }`,
	sandboxtest.Recursion: `export default { consumers: { c: { h() {
  const f = (n) => f(n + 1) + 1
  return f(0)
} } } }`,
	sandboxtest.MemoryHog: `export default { consumers: { c: { h() {
  let s = 'x'
  for (;;) s = s + s
} } } }`,
	sandboxtest.HugeOutput: `export default { consumers: { c: { h() {
  return 'x'.repeat(1000000)
} } } }`,
	sandboxtest.FreshInstance: `let n = 0
export default { consumers: { c: { h() { return ++n } } } }`,
	sandboxtest.Deterministic: `export default { consumers: { c: { h() {
  return { now: Date.now(), random: [Math.random(), Math.random(), Math.random()] }
} } } }`,
	sandboxtest.BadModule: `export default { consumers: { c: { h() { return 1 +* 2 } } } }`,
}

func modules(name string) (sandboxtest.Case, bool) {
	src, ok := conformance[name]
	if !ok {
		return sandboxtest.Case{}, false
	}
	return sandboxtest.Case{
		Source:   sandbox.Source{Name: name + ".js", Code: []byte(src)},
		Function: "consumers.c.h",
	}, true
}

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, js.New(js.Options{}), modules)
}
