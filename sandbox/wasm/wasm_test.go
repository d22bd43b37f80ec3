package wasm

import (
	"testing"

	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// conformanceExports maps each sandboxtest behaviour to the export of the conformance
// guest (testdata/guests/conformance) that implements it.
var conformanceExports = map[string]string{
	sandboxtest.Definition:      "",
	sandboxtest.EchoGlobals:     "echo_globals",
	sandboxtest.GlobalsReadOnly: "globals_readonly",
	sandboxtest.CallTool:        "call_tool",
	sandboxtest.ToolErrorClass:  "tool_error_class",
	sandboxtest.CatchToolError:  "catch_tool_error",
	sandboxtest.Terminate:       "terminate",
	sandboxtest.ToolPanic:       "tool_panic",
	sandboxtest.ToolFlood:       "tool_flood",
	sandboxtest.Throw:           "throw",
	sandboxtest.Console:         "console",
	sandboxtest.ConsoleFlood:    "console_flood",
	sandboxtest.EndlessLoop:     "endless_loop",
	sandboxtest.Recursion:       "recursion",
	sandboxtest.MemoryHog:       "memory_hog",
	sandboxtest.HugeOutput:      "huge_output",
	sandboxtest.FreshInstance:   "fresh_instance",
	sandboxtest.Deterministic:   "deterministic",
}

func TestConformance(t *testing.T) {
	code := buildGuest(t, conformanceDir)
	eng := sharedEngine(t)
	sandboxtest.Run(t, eng, func(name string) (sandboxtest.Case, bool) {
		if name == sandboxtest.BadModule {
			return sandboxtest.Case{Source: sandbox.Source{Name: "bad.wasm", Code: []byte("\x00asm\x01\x00\x00\x00\xff")}}, true
		}
		fn, ok := conformanceExports[name]
		if !ok {
			return sandboxtest.Case{}, false
		}
		return sandboxtest.Case{Source: sandbox.Source{Name: "conformance.wasm", Code: code}, Function: fn}, true
	})
}

func TestEveryBehaviourHasAnExport(t *testing.T) {
	for _, b := range sandboxtest.Behaviours {
		if _, ok := conformanceExports[b]; !ok && b != sandboxtest.BadModule {
			t.Errorf("behaviour %s: no export", b)
		}
	}
}
