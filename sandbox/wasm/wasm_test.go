package wasm

import (
	"os"
	"path/filepath"
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
	runConformance(t, "conformance.wasm", buildGuest(t, conformanceDir))
}

// TestRustConformance runs the suite against the guest built with the Rust SDK
// (committed beside its sources; cmd/scripthost checks it is current).
func TestRustConformance(t *testing.T) {
	runConformance(t, "conformance-rust.wasm", committedModule(t, rustConformance))
}

const (
	rustConformance = "testdata/guests/conformance-rust/conformance.wasm"
	ascConformance  = "testdata/guests/conformance-assemblyscript/conformance.wasm"
)

// TestAssemblyScriptConformance runs the suite against the guest built with the
// AssemblyScript SDK (committed beside its sources; cmd/scripthost checks it is
// current).
func TestAssemblyScriptConformance(t *testing.T) {
	runConformance(t, "conformance-assemblyscript.wasm", committedModule(t, ascConformance))
}

func committedModule(t testing.TB, path string) []byte {
	t.Helper()
	code, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run %s/build.sh)", err, filepath.Dir(path))
	}
	return code
}

// runConformance runs sandboxtest against a guest module: every behaviour, whatever
// the guest's source language.
func runConformance(t *testing.T, name string, code []byte) {
	eng := sharedEngine(t)
	sandboxtest.Run(t, eng, func(behaviour string) (sandboxtest.Case, bool) {
		if behaviour == sandboxtest.BadModule {
			return sandboxtest.Case{Source: sandbox.Source{Name: "bad.wasm", Code: []byte("\x00asm\x01\x00\x00\x00\xff")}}, true
		}
		fn, ok := conformanceExports[behaviour]
		if !ok {
			return sandboxtest.Case{}, false
		}
		return sandboxtest.Case{Source: sandbox.Source{Name: name, Code: code}, Function: fn}, true
	})
}

func TestEveryBehaviourHasAnExport(t *testing.T) {
	for _, b := range sandboxtest.Behaviours {
		if _, ok := conformanceExports[b]; !ok && b != sandboxtest.BadModule {
			t.Errorf("behaviour %s: no export", b)
		}
	}
}
