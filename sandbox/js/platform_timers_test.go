package js_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// TestTimers: setTimeout, setInterval, their clearing, argument passing, ordering
// against microtasks (the HTML event loop's order), in real time.
func TestTimers(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"order", `const log = [];
			setTimeout(() => log.push('t20'), 20);
			setTimeout(() => log.push('t0a'));
			setTimeout(() => log.push('t0b'), 0);
			setTimeout((a, b) => log.push('args ' + a + b), 5, 'x', 'y');
			Promise.resolve().then(() => log.push('promise'));
			queueMicrotask(() => log.push('micro'));
			log.push('sync');
			await new Promise((r) => setTimeout(r, 30));
			return log`, `["sync","promise","micro","t0a","t0b","args xy","t20"]`},
		{"clear", `const log = [];
			const a = setTimeout(() => log.push('cleared'), 1); clearTimeout(a);
			let n = 0; const iv = setInterval(() => { n++; if (n === 3) clearInterval(iv) }, 1);
			clearTimeout(undefined); clearTimeout(12345); clearInterval('nope');
			await new Promise((r) => setTimeout(r, 40));
			return [log, n, typeof a, a > 0]`, `[[],3,"number",true]`},
		{"nested await", `let total = 0;
			for (let i = 0; i < 5; i++) { await new Promise((r) => setTimeout(r, 1)); total++ }
			return total`, `5`},
		{"performance.now", `const a = performance.now(); await new Promise((r) => setTimeout(r, 5)); const b = performance.now(); return [typeof a, b > a, typeof performance.timeOrigin]`, `["number",true,"number"]`},
		{"refusals", `const out = [];
			try { setTimeout('alert(1)', 0) } catch (e) { out.push(e.name) }
			try { queueMicrotask(1) } catch (e) { out.push(e.name) }
			return out`, `["TypeError","TypeError"]`},
	})
}

// TestDeterministicTimers: in deterministic mode timers run on the virtual clock: a
// one-hour timer completes at once and Date.now moves by exactly the delay.
func TestDeterministicTimers(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	runCases(t, &sandbox.Determinism{Now: now, Seed: 1}, []jsCase{
		{"virtual clock", `const t0 = Date.now(), p0 = performance.now();
			await new Promise((r) => setTimeout(r, 3600000));
			const t1 = Date.now();
			let ticks = 0; await new Promise((r) => { const iv = setInterval(() => { if (++ticks === 10) { clearInterval(iv); r() } }, 60000) });
			return [t0, t1 - t0, Date.now() - t1, performance.now() - p0, new Date().toISOString()]`,
			`[1767225600000,3600000,600000,4200000,"2026-01-01T01:10:00.000Z"]`},
		{"order", `const log = [];
			setTimeout(() => log.push('b'), 2000); setTimeout(() => log.push('a'), 1000); setTimeout(() => log.push('c'), 2000);
			await new Promise((r) => setTimeout(r, 5000));
			return log`, `["a","b","c"]`},
	})
}

// TestTimersEndWithTheInvocation: what is pending when the handler settles is
// cancelled with a warning; an exception in a timer or a microtask fails the
// invocation like an uncaught one; waiting counts against the timeout.
func TestTimersEndWithTheInvocation(t *testing.T) {
	invoke := func(body string, lim sandbox.Limits) (sandbox.Result, error) {
		p := load(t, platformEngine, "timers.js", "export default { h: { async f() {\n"+body+"\n} } }")
		return p.Invoke(context.Background(), sandbox.Invocation{Function: "h.f", Phase: scripthost.PhaseProducer, Tools: sandboxtest.NewTools(), Limits: lim})
	}
	res, err := invoke(`setTimeout(() => console.log('never'), 10); setInterval(() => {}, 5); return 'done'`, sandbox.Limits{})
	if err != nil || string(res.Value) != `"done"` {
		t.Fatalf("got %s, %v; want \"done\"", res.Value, err)
	}
	if len(res.Console) != 1 || !strings.Contains(res.Console[0].Text, "2 timer(s) still pending") {
		t.Errorf("console: got %+v, want one warning about 2 cancelled timers", res.Console)
	}

	_, err = invoke(`await new Promise((r) => setTimeout(() => { throw new RangeError('in a timer') }, 1)); return 1`, sandbox.Limits{})
	if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), "RangeError: in a timer") {
		t.Errorf("throwing timer: got %v, want a logic error with the RangeError", err)
	}
	_, err = invoke(`queueMicrotask(() => { throw new Error('in a microtask') }); await new Promise((r) => setTimeout(r, 5)); return 1`, sandbox.Limits{})
	if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), "in a microtask") {
		t.Errorf("throwing microtask: got %v, want a logic error with its message", err)
	}
	_, err = invoke(`await new Promise((r) => setTimeout(r, 60000)); return 1`, sandbox.Limits{Timeout: 100 * time.Millisecond})
	var le *sandbox.LimitError
	if !errors.As(err, &le) || le.Limit != "timeout" {
		t.Errorf("a timer past the timeout: got %v, want a timeout LimitError", err)
	}
}
