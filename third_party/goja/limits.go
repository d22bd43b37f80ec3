package goja

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Limits bound what one call of a built-in may allocate or loop over natively, in one
// step and without checking for interrupts (scripthost patch). An embedder that runs
// untrusted code under a memory budget cannot stop such a call once it started: the
// call is refused before it allocates. A zero field means no bound.
type Limits struct {
	// MemoryBytes is the budget the bounds derive from; refusals name it.
	MemoryBytes int64
	// MaxElements bounds the length of an array or array-like that an Array method
	// loops over or an Array constructor creates, the length of an argument list
	// spread by Function.prototype.apply, Reflect.apply and Reflect.construct, and what
	// Array.prototype.concat, flat and fill produce.
	MaxElements int64
	// MaxChars bounds the length of the string Array.prototype.join builds.
	MaxChars int64
	// MaxJSON bounds the length of the text JSON.stringify builds.
	MaxJSON int64
	// MaxJSONNesting bounds how deeply JSON.parse input may nest: the parser recurses
	// natively once per level.
	MaxJSONNesting int
	// RegexTimeout, when positive, is how long one regular expression match may take,
	// and turns regexp2 giving up a backtracking match at its own, process-wide timeout
	// (which goja reports as "no match") into a refusal ("regex"). exec and test are
	// timed against it; a scan for every match (replace, match, split with a global
	// pattern) is held to regexp2's timeout per match.
	RegexTimeout time.Duration
	// DisableDynamicCode makes eval, indirect eval and the Function, AsyncFunction and
	// GeneratorFunction constructors throw an EvalError with this message.
	DisableDynamicCode string
	// Allocate, when set, meters what built-ins allocate in bulk (scripthost patch):
	// ArrayBuffer and typed array backing stores (new, slice, from, filter; an
	// embedder's own through Runtime.Charge), an array's element storage as it grows past a slice's
	// capacity, and the values JSON.parse builds (estimated per value). Each is
	// counted before it is allocated; when the bytes counted since the last call
	// reach AllocStep, or one allocation alone does, Allocate is called with the size
	// of the allocation about to be made (the ones counted before it are made
	// already). It returns "" to let the allocation go ahead; anything else is a
	// refusal, reported through Exceeded as a "memory" limit and thrown. An embedder
	// that watches the heap after the fact uses it to look before a built-in grows
	// the heap by a budget in one call, or by many in a loop that never returns to
	// the VM's instruction loop.
	Allocate  func(n int64) string
	AllocStep int64
	// Exceeded is called before a refused call throws, with the kind of limit
	// ("memory" or "stack") and what was refused; an embedder typically interrupts the
	// runtime from it. The call then throws an Error ("memory limit", "stack limit").
	Exceeded func(kind, detail string)
}

// SetLimits installs l (scripthost patch). It must be called before any code runs.
func (r *Runtime) SetLimits(l Limits) {
	r.limits = &l
}

// refuse reports what was refused and throws.
func (r *Runtime) refuse(kind, detail string) {
	if f := r.limits.Exceeded; f != nil {
		f(kind, detail)
	}
	panic(r.newError(r.getError(), kind+" limit"))
}

func (r *Runtime) refuseMemory(what string, n any) {
	r.refuse("memory", fmt.Sprintf("%s of %v exceeds the memory budget of %d bytes", what, n, r.limits.MemoryBytes))
}

// limitElems refuses n elements over MaxElements.
func (r *Runtime) limitElems(what string, n int64) {
	if l := r.limits; l != nil && l.MaxElements > 0 && n > l.MaxElements {
		r.refuseMemory(what, n)
	}
}

// limitChars refuses a string of n characters over MaxChars.
func (r *Runtime) limitChars(what string, n int64) {
	if l := r.limits; l != nil && l.MaxChars > 0 && n > l.MaxChars {
		r.refuseMemory(what, n)
	}
}

// limitLength refuses a method of Array.prototype looping over a length over
// MaxElements.
func (r *Runtime) limitLength(method string, n int64) {
	if l := r.limits; l != nil && l.MaxElements > 0 && n > l.MaxElements {
		r.refuseMemory("Array.prototype."+method+" over a length", n)
	}
}

// limitBytes refuses an ArrayBuffer or typed array of n bytes over MemoryBytes, and
// charges the bytes to the allocation meter (see Limits.Allocate): it is called
// just before the backing store is allocated.
func (r *Runtime) limitBytes(what string, n int64) {
	if l := r.limits; l != nil && l.MemoryBytes > 0 && n > l.MemoryBytes {
		r.refuseMemory(what, n)
	}
	r.charge(n)
}

// checkDynamicCode throws when dynamic code is disabled.
func (r *Runtime) checkDynamicCode() {
	if l := r.limits; l != nil && l.DisableDynamicCode != "" {
		panic(r.newError(r.getEvalError(), l.DisableDynamicCode))
	}
}

// regexStart returns when a match starts, if matches are timed.
func (r *Runtime) regexStart() time.Time {
	if l := r.limits; l != nil && l.RegexTimeout > 0 {
		return time.Now()
	}
	return time.Time{}
}

// limitRegex refuses a match of p that regexp2 gave up at its own timeout, or, when
// start is set (a single match), that took RegexTimeout or more. A scan for every
// match is only held to regexp2's timeout, which applies to each match in it.
func (r *Runtime) limitRegex(p *regexpPattern, start time.Time) {
	if r.limits == nil || r.limits.RegexTimeout <= 0 {
		return
	}
	if w := p.regexp2Wrapper; w != nil && w.timedOut {
		w.timedOut = false
		r.refuse("regex", fmt.Sprintf("a regular expression match ran past the %v limit", w.rx.MatchTimeout))
	}
	if start.IsZero() {
		return
	}
	if took, max := time.Since(start), r.limits.RegexTimeout; took >= max {
		r.refuse("regex", fmt.Sprintf("a regular expression match took %dms, over the %dms limit",
			took.Round(time.Millisecond).Milliseconds(), max.Milliseconds()))
	}
}

// charge counts n bytes a built-in is about to allocate (scripthost patch: see
// Limits.Allocate) and throws if the embedder refuses them.
func (r *Runtime) charge(n int64) {
	l := r.limits
	if l == nil || l.Allocate == nil || n <= 0 {
		return
	}
	r.allocated += n
	if r.allocated < l.AllocStep {
		return
	}
	r.allocated = 0
	if detail := l.Allocate(n); detail != "" {
		r.refuse("memory", detail)
	}
}

// Charge counts n bytes an embedder's own built-in is about to allocate for the
// script, as goja's built-ins count theirs (scripthost patch: see Limits.Allocate).
// It must be called on the runtime's goroutine, from a function the script called;
// a refusal throws.
func (r *Runtime) Charge(n int64) {
	r.charge(n)
}

// interruptEvery is how many iterations a native loop too cheap per iteration to
// check for an interrupt each time goes between checks (scripthost patch).
const interruptEvery = 1 << 12

// tick checks for an interrupt every interruptEvery values of i, the index of a
// native loop (scripthost patch).
func (r *Runtime) tick(i int) {
	if i&(interruptEvery-1) == 0 {
		r.checkInterrupt()
	}
}

// checkInterrupt lets a long native loop be interrupted: it panics as the VM's own
// loop does once Interrupt was called.
func (r *Runtime) checkInterrupt() {
	vm := r.vm
	if atomic.LoadUint32(&vm.interrupted) != 0 {
		vm.interruptLock.Lock()
		v := &InterruptedError{iface: vm.interruptVal}
		v.stack = vm.captureStack(nil, 0)
		vm.interruptLock.Unlock()
		panic(v)
	}
}

// limitSplit refuses split(”) of a string longer than MaxElements: one element per
// character. The String methods that build a string are held to the maximum string
// length instead (SetMaxStringLength), checked before they grow.
func (r *Runtime) limitSplit(call FunctionCall) {
	l := r.limits
	if l == nil || l.MaxChars <= 0 {
		return
	}
	if sep, ok := call.Argument(0).(String); ok && sep.Length() == 0 {
		r.limitElems("String.prototype.split", int64(call.This.toString().Length()))
	}
}

// limitJSONNesting refuses JSON text nested deeper than MaxJSONNesting.
func (r *Runtime) limitJSONNesting(s string) {
	l := r.limits
	if l == nil || l.MaxJSONNesting <= 0 || len(s) <= l.MaxJSONNesting {
		return
	}
	if Nesting(s, l.MaxJSONNesting, true) > l.MaxJSONNesting {
		r.refuse("stack", fmt.Sprintf("JSON.parse of text nested deeper than %d levels", l.MaxJSONNesting))
	}
}

// Nesting returns the deepest nesting of brackets ([, {, () in s, stopping early once
// it passes max (scripthost patch). With json set, the contents of double-quoted
// strings are skipped as JSON defines them; otherwise every bracket counts, which can
// only overestimate.
func Nesting(s string, max int, json bool) int {
	depth, deepest := 0, 0
	inString := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = json
		case '[', '{', '(':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > max {
					return deepest
				}
			}
		case ']', '}', ')':
			depth--
		}
	}
	return deepest
}
