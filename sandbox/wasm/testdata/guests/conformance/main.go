// Command conformance is the Go guest behind the sandboxtest behaviours (one export per
// behaviour) and the engine's own tests. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o conformance.wasm .
package main

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/scripthost/scripthost/sandbox/wasm/guest"
)

func init() {
	guest.Define(guest.Workflow{
		Topics: []string{"in", "out"},
		Consumers: map[string]guest.Consumer{
			"c": {Subscribe: []string{"in"}, Publishes: []string{"out"}, Prepare: "c_prepare"},
		},
	})
}

func main() {}

//go:wasmexport c_prepare
func cPrepare() { guest.Handle(func() (any, error) { return "prepared", nil }) }

func orNull(b json.RawMessage) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

//go:wasmexport echo_globals
func echoGlobals() {
	guest.Handle(func() (any, error) {
		s, p, m := guest.Raw()
		args := guest.Args()
		if args == nil {
			args = []json.RawMessage{}
		}
		return map[string]any{"state": orNull(s), "prepared": orNull(p), "mutationResult": orNull(m), "args": args}, nil
	})
}

// globals_readonly changes its decoded copy of __state__ every way it can, then reads
// __state__ again: the host's value is out of the guest's reach.
//
//go:wasmexport globals_readonly
func globalsReadOnly() {
	guest.Handle(func() (any, error) {
		var s map[string]any
		if err := guest.State(&s); err != nil {
			return nil, err
		}
		s["x"] = "changed"
		delete(s, "a")
		if l, ok := s["list"].([]any); ok {
			s["list"] = append(l, 2.0)
		}
		s = map[string]any{"replaced": 1}
		_ = s
		var again json.RawMessage
		err := guest.State(&again)
		return again, err
	})
}

//go:wasmexport call_tool
func callTool() {
	guest.Handle(func() (any, error) {
		var out json.RawMessage
		err := guest.Call("Echo", "say", map[string]string{"text": "hi"}, &out)
		return out, err
	})
}

//go:wasmexport tool_error_class
func toolErrorClass() {
	guest.Handle(func() (any, error) {
		return nil, guest.Call("Fail", "network", struct{}{}, nil)
	})
}

//go:wasmexport catch_tool_error
func catchToolError() {
	guest.Handle(func() (any, error) {
		err := guest.Call("Fail", "network", struct{}{}, nil)
		var e *guest.Error
		if !errors.As(err, &e) {
			return nil, errors.New("no tool error")
		}
		return map[string]string{"class": e.Class, "code": e.Code}, nil
	})
}

//go:wasmexport terminate
func terminate() {
	guest.Handle(func() (any, error) {
		_ = guest.Call("Fail", "terminate", struct{}{}, nil)
		return "caught", nil
	})
}

//go:wasmexport tool_panic
func toolPanic() {
	guest.Handle(func() (any, error) {
		return nil, guest.Call("Fail", "panic", struct{}{}, nil)
	})
}

//go:wasmexport tool_flood
func toolFlood() {
	guest.Handle(func() (any, error) {
		for n := 0; ; n++ {
			_ = guest.Call("Echo", "say", map[string]int{"i": n}, nil)
		}
	})
}

//go:wasmexport throw
func throw() {
	guest.Handle(func() (any, error) {
		panic(errors.New("boom"))
	})
}

//go:wasmexport fail_error
func failError() {
	guest.Handle(func() (any, error) {
		return nil, errors.New("boom from an error")
	})
}

//go:wasmexport console
func console() {
	guest.Handle(func() (any, error) {
		guest.Log("one")
		guest.Warn("two")
		guest.LogError("three")
		return nil, nil
	})
}

//go:wasmexport console_flood
func consoleFlood() {
	guest.Handle(func() (any, error) {
		line := strings.Repeat("x", 100)
		for range 1000 {
			guest.Log(line)
		}
		return "done", nil
	})
}

//go:wasmexport stdout
func stdout() {
	guest.Handle(func() (any, error) {
		println("to stderr")
		return nil, nil
	})
}

var sink int

//go:wasmexport endless_loop
func endlessLoop() {
	for i := 0; ; i++ {
		sink = i
	}
}

func recurse(n int) int {
	var pad [4096]byte
	pad[n%4096] = byte(n)
	return recurse(n+1) + int(pad[0])
}

//go:wasmexport recursion
func recursion() { guest.Handle(func() (any, error) { return recurse(0), nil }) }

var hog [][]byte

//go:wasmexport memory_hog
func memoryHog() {
	guest.Handle(func() (any, error) {
		b := []byte("x")
		for {
			b = append(b, b...)
			hog = append(hog, b)
		}
	})
}

//go:wasmexport huge_output
func hugeOutput() {
	guest.Handle(func() (any, error) { return strings.Repeat("x", 1_000_000), nil })
}

var counter int

//go:wasmexport fresh_instance
func freshInstance() {
	guest.Handle(func() (any, error) {
		counter++
		return counter, nil
	})
}

//go:wasmexport deterministic
func deterministic() {
	guest.Handle(func() (any, error) {
		return map[string]any{
			"now":    time.Now().UnixMilli(),
			"random": []float64{rand.Float64(), rand.Float64(), rand.Float64()},
		}, nil
	})
}

//go:wasmexport phase
func phase() { guest.Handle(func() (any, error) { return guest.Phase(), nil }) }

//go:wasmexport publish
func publish() {
	guest.Handle(func() (any, error) {
		return nil, guest.Publish("out", "id-1", map[string]string{"name": "a"})
	})
}

//go:wasmexport peek
func peek() {
	guest.Handle(func() (any, error) { return guest.Peek("in", 3) })
}

// raw_panic panics outside guest.Handle: the Go runtime prints the panic and aborts.
//
//go:wasmexport raw_panic
func rawPanic() {
	panic("raw boom")
}
