// Package sandboxtest is the conformance suite every sandbox engine passes. An engine
// supplies one module per behaviour named below (Modules); Run loads each, invokes it
// with the suite's in-memory Tools and the limits the behaviour needs, and checks the
// outcome. A behaviour the engine does not supply fails the suite.
package sandboxtest

import "github.com/scripthost/scripthost/sandbox"

// Case is an engine-specific module implementing one named behaviour.
type Case struct {
	Source sandbox.Source
	// Function is the function reference Invoke is called with. Unused by Definition
	// and BadModule.
	Function string
	// Skip, when set, says why the engine's module cannot show this behaviour: the
	// suite skips it with this reason instead of checking it.
	Skip string
}

// Modules returns the module an engine supplies for a behaviour name.
type Modules func(name string) (Case, bool)

// Behaviour names. Each comment says exactly what the module (and its Function) must
// do. "Return X" means the function's result, as JSON, is X.
const (
	// Definition: a module whose definition JSON contains
	// "topics": ["in", "out"] and "consumers": {"c": {"subscribe": ["in"],
	// "publishes": ["out"], "prepare": <function reference>}}. The referenced prepare
	// function returns the string "prepared". Case.Function is ignored: the suite
	// invokes the reference it reads from the definition.
	Definition = "Definition"

	// EchoGlobals: return {"state": S, "prepared": P, "mutationResult": M, "args": A}
	// where S, P, M are the values of __state__, __prepared__, __mutationResult__
	// (null when the global is not defined) and A is the array of all arguments.
	EchoGlobals = "EchoGlobals"

	// GlobalsReadOnly: try, each attempt guarded so that a failure is ignored, to
	// reassign __state__ to 1, set __state__.x = "changed", delete __state__.a and
	// push 2 onto __state__.list; then return __state__. The suite passes
	// {"a": 1, "list": [1]} and expects that value back unchanged.
	GlobalsReadOnly = "GlobalsReadOnly"

	// CallTool: call tool Echo.say with input {"text": "hi"} and return its result
	// (Echo.say returns its input).
	CallTool = "CallTool"

	// ToolErrorClass: call Fail.network with input {} and let the error propagate out
	// of the function. Invoke must return an error of class network that wraps
	// ErrNetwork.
	ToolErrorClass = "ToolErrorClass"

	// CatchToolError: call Fail.network with input {}, catch the error and return
	// {"class": <its class>, "code": <its code>}, i.e. {"class": "network", "code":
	// "connection_reset"}.
	CatchToolError = "CatchToolError"

	// Terminate: call Fail.terminate with input {} inside a try/catch (or the engine's
	// equivalent of handling the error); if the call returns or the error is caught,
	// return "caught". Fail.terminate returns sandbox.Terminate(ErrTerminateCause), so
	// Invoke must fail with an error wrapping both sandbox.ErrTerminate and
	// ErrTerminateCause.
	Terminate = "Terminate"

	// ToolPanic: call Fail.panic with input {} and let the error propagate. The tool
	// panics; Invoke must return an internal *scripthost.Error with code tool_panic,
	// and the process must survive.
	ToolPanic = "ToolPanic"

	// ToolFlood: call Echo.say with input {"i": n} for n = 0, 1, 2, ... forever. The
	// suite sets MaxToolCalls to 10: Invoke must return a *sandbox.LimitError
	// "tool_calls", and no more than 10 calls may reach the tools.
	ToolFlood = "ToolFlood"

	// Throw: throw (raise, panic) an error whose message contains "boom". Invoke must
	// return a logic *scripthost.Error with code script_error and Line > 0.
	Throw = "Throw"

	// Console: write "one" at level log, "two" at level warn and "three" at level
	// error (console.log/warn/error), then return null.
	Console = "Console"

	// ConsoleFlood: write 1000 lines of 100 "x" characters each at level log, then
	// return "done". The suite sets MaxConsoleBytes to 1000: Invoke must succeed with
	// "done", keep at most 1000 bytes of lines plus one marker line.
	ConsoleFlood = "ConsoleFlood"

	// EndlessLoop: loop forever without calling anything. The suite sets a short
	// Timeout: Invoke must return a *sandbox.LimitError "timeout" soon after it. The
	// suite also cancels the context of a run with a long Timeout and expects an
	// error wrapping context.Canceled.
	EndlessLoop = "EndlessLoop"

	// Recursion: call itself without bound. The suite sets MaxStackDepth to 200:
	// Invoke must return a *sandbox.LimitError "stack" (or "memory" for an engine
	// whose stack lives in a capped linear memory).
	Recursion = "Recursion"

	// MemoryHog: keep doubling a string (or buffer) until memory runs out. The suite
	// sets MemoryBytes to 32 MiB and MaxMemoryPages to 512: Invoke must return a
	// *sandbox.LimitError "memory".
	MemoryHog = "MemoryHog"

	// HugeOutput: return a string of 1,000,000 "x" characters. The suite sets
	// MaxOutputBytes to 1000: Invoke must return a *sandbox.LimitError "output".
	HugeOutput = "HugeOutput"

	// FreshInstance: increment a module-level counter (initially 0) and return its new
	// value. Every invocation runs in a fresh instance, so it returns 1 every time.
	FreshInstance = "FreshInstance"

	// Deterministic: return {"now": <current time, milliseconds since the Unix
	// epoch>, "random": [three random numbers in [0, 1)]}. With Determinism set, now
	// is Determinism.Now and the numbers depend only on the seed.
	Deterministic = "Deterministic"

	// BadModule: a source that fails to load (a syntax error, an invalid binary).
	// Load must return a logic error. Case.Function is ignored.
	BadModule = "BadModule"
)

// Behaviours lists every behaviour name, in the order Run checks them.
var Behaviours = []string{
	Definition, EchoGlobals, GlobalsReadOnly, CallTool, ToolErrorClass, CatchToolError,
	Terminate, ToolPanic, ToolFlood, Throw, Console, ConsoleFlood, EndlessLoop, Recursion,
	MemoryHog, HugeOutput, FreshInstance, Deterministic, BadModule,
}
