package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// FuzzHostCall calls one host function with raw pointer and length values from the
// guest (testdata/wat/abicall.wat). Whatever they are, the invocation ends with a
// result or a logic error (a sandbox violation, a limit, the guest's own failure),
// never a panic, an internal error or a read outside the guest memory.
func FuzzHostCall(f *testing.F) {
	code, err := os.ReadFile(filepath.Join("testdata", "wat", "abicall.wasm"))
	if err != nil {
		f.Fatal(err)
	}
	e := newEngine(f, Options{})
	p, err := e.load(context.Background(), sandbox.Source{Name: "abicall.wasm", Code: code})
	if err != nil {
		f.Fatal(err)
	}
	const memSize = 1 << 16
	f.Add(uint8(2), uint32(1100), uint32(8), uint32(0), uint32(2)) // tool_call Echo.say
	f.Add(uint8(1), uint32(16), uint32(memSize-4), uint32(8), uint32(0))
	f.Add(uint8(4), uint32(0), uint32(0xffffff00), uint32(0x200), uint32(0))
	f.Add(uint8(6), uint32(0), uint32(memSize+1), uint32(0), uint32(0))
	f.Add(uint8(5), uint32(memSize), uint32(0), uint32(0), uint32(0))
	f.Fuzz(func(t *testing.T, op uint8, a, b, c, d uint32) {
		arg := fmt.Sprintf(`"%08x%08x%08x%08x%08x"`, op%8, a, b, c, d)
		_, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "call", Tools: &testTools{},
			Args: []json.RawMessage{json.RawMessage(arg)}})
		if err == nil {
			return
		}
		var se *scripthost.Error
		if !errors.As(err, &se) || se.Class != scripthost.ClassLogic {
			t.Fatalf("op %d (%#x, %#x, %#x, %#x): got %v (class %s), want a logic error", op%8, a, b, c, d, err, scripthost.ClassOf(err))
		}
	})
}

// FuzzLoad loads arbitrary bytes as a module: a logic error naming the module or a
// program, never a panic. The binary reader and rewriter run before wazero sees it.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"good.wasm", "grow.wasm", "growmax.wasm", "pointers.wasm", "bigmem.wasm", "imports.wasm"} {
		f.Add(readFixture(f, name).Code)
	}
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x05\x04\x01\x01\x01\x02"))
	// The compilation budgets' attacks too large for a corpus file (testdata/fuzz
	// holds the tables'): 100,000 nested blocks, and one function past the limit.
	f.Add(genGuest(genNested(100_000)).bytes())
	m := genGuest(nil)
	for range defaultMaxFunctions {
		m.addFunc(0, "", []byte{0x00, 0x0b})
	}
	f.Add(m.bytes())
	e := newEngine(f, Options{})
	f.Fuzz(func(t *testing.T, code []byte) {
		p, err := e.load(context.Background(), sandbox.Source{Name: "fuzz.wasm", Code: code})
		if err != nil {
			if !scripthost.IsLogic(err) {
				t.Fatalf("got %v (class %s), want a logic error", err, scripthost.ClassOf(err))
			}
			return
		}
		_ = p.Close(context.Background())
	})
}
