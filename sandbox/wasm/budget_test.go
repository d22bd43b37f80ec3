package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// liveness is how long a test waits for what must end: far more than any of them
// takes, so that only a hang (or the minutes the same module took before it was
// bounded) reaches it.
const liveness = 90 * time.Second

const (
	refFunc   = 0x70
	refExtern = 0x6f
	genZero   = 2056 // offset of "0" in a generated guest
)

// genGuestZero is genGuest with "0" in memory at genZero.
func genGuestZero(run []byte) *genModule {
	m := genGuest(run)
	m.datas = append(m.datas, genActiveData(genZero, []byte("0")))
	return m
}

// genTableGrow is a body that grows table 0, of reference type rt, by n elements and
// returns "1" when table.grow returned want, and traps otherwise.
func genTableGrow(rt byte, n, want int32) []byte {
	b := []byte{0x00, 0xd0, rt, 0x41}
	b = appendS32(b, n)
	b = append(b, prefixMisc, miscTableGrow, 0x00, 0x41)
	b = appendS32(b, want)
	b = append(b, 0x47, 0x04, 0x40, 0x00, 0x0b) // i32.ne; if; unreachable; end
	return append(b, genReturnOne()[1:]...)
}

// genTableFill is a body that grows table 0, of reference type rt, by n elements,
// ignoring the result, then fills n elements from 0 with null, and returns "1".
func genTableFill(rt byte, n int32) []byte {
	b := []byte{0x00, 0xd0, rt, 0x41}
	b = appendS32(b, n)
	b = append(b, prefixMisc, miscTableGrow, 0x00, 0x1a) // table.grow; drop
	b = append(b, 0x41, 0x00, 0xd0, rt, 0x41)
	b = appendS32(b, n)
	b = append(b, prefixMisc, miscTableFill, 0x00)
	return append(b, genReturnOne()[1:]...)
}

// genMemoryGrow is a body that grows the memory by n pages and returns "1" when the
// growth was refused, "0" when it was granted.
func genMemoryGrow(n int32) []byte {
	b := []byte{0x00, 0x41}
	b = appendS32(b, n)
	b = append(b, opMemoryGrow, 0x00, 0x41, 0x7f, 0x46, 0x04, 0x40) // i32.const -1; i32.eq; if
	b = append(b, genReturnOne()[1:len(genReturnOne())-1]...)
	b = append(b, 0x05) // else
	b = append(b, genCallReturnValue(genZero, 1)[1:]...)
	return append(b, 0x0b) // end of the function
}

// TestTableGrowthCapped: a table.grow past the table cap returns -1 (funcref and
// externref tables declared without a maximum, 2*10^8 elements asked, which took
// 4.8 GB and 14 s before tables were capped), and one within it still succeeds.
func TestTableGrowthCapped(t *testing.T) {
	e := newEngine(t, Options{})
	tests := []struct {
		name string
		rt   byte
		n    int32
		want int32 // what table.grow returns
	}{
		{"funcref 2e8", refFunc, 200_000_000, -1},
		{"externref 2e8", refExtern, 200_000_000, -1},
		{"funcref past the cap", refFunc, defaultMaxTableElements + 1, -1},
		{"externref to the cap", refExtern, defaultMaxTableElements, 0},
		{"funcref 100", refFunc, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := genGuest(genTableGrow(tt.rt, tt.n, tt.want))
			m.tables = append(m.tables, genTable(tt.rt, 0, 0, false))
			p := loadGen(t, e, tt.name+".wasm", m)
			res, err := invokeWithin(t, p, sandbox.Invocation{Function: "run"})
			if err != nil {
				t.Fatalf("got %v, want table.grow to return %d", err, tt.want)
			}
			if string(res.Value) != "1" {
				t.Errorf("got %s, want 1", res.Value)
			}
		})
	}
}

// TestTableFillCapped: a table.fill over 2*10^8 elements after a table.grow as large
// (refused) traps on the table's bounds rather than filling gigabytes.
func TestTableFillCapped(t *testing.T) {
	e := newEngine(t, Options{})
	for _, rt := range []byte{refFunc, refExtern} {
		m := genGuest(genTableFill(rt, 200_000_000))
		m.tables = append(m.tables, genTable(rt, 0, 0, false))
		p := loadGen(t, e, "fill.wasm", m)
		_, err := invokeWithin(t, p, sandbox.Invocation{Function: "run"})
		hostileCase{code: scripthost.CodeScript, want: []string{"run: wasm trap: invalid table access"}}.check(t, err)
	}
}

// TestTablesCountAgainstMemory: a module that grows a table is counted for the
// table's maximum, 65,536 elements of 16 bytes (16 pages), against the memory cap.
func TestTablesCountAgainstMemory(t *testing.T) {
	e := newEngine(t, Options{})
	m := genGuestZero(genMemoryGrow(10))
	m.tables = append(m.tables, genTable(refFunc, 0, 0, false))
	// A second export that grows the table, so that the module is counted for it.
	m.addFunc(0, "grow_table", genTableGrow(refFunc, 1, 0))
	p := loadGen(t, e, "tablemem.wasm", m)
	if p.tablePages != 16 {
		t.Errorf("got %d pages counted for the table, want 16", p.tablePages)
	}
	tests := []struct {
		pages uint32
		want  string // "1": memory.grow(10) refused, "0": granted
	}{
		{20, "1"}, // 1 + 10 pages of memory do not fit beside the table's 16
		{27, "0"},
		{100, "0"},
	}
	for _, tt := range tests {
		res, err := invokeWithin(t, p, sandbox.Invocation{Function: "run", Limits: sandbox.Limits{MaxMemoryPages: tt.pages}})
		if err != nil {
			t.Fatalf("cap %d pages: %v", tt.pages, err)
		}
		if string(res.Value) != tt.want {
			t.Errorf("cap %d pages: got %s, want %s", tt.pages, res.Value, tt.want)
		}
	}
	_, err := invokeWithin(t, p, sandbox.Invocation{Function: "run", Limits: sandbox.Limits{MaxMemoryPages: 15}})
	hostileCase{limit: "memory", want: []string{"tables and element segments need 16 pages (1 MiB) of memory, above the limit of 15 pages"}}.check(t, err)
}

// TestLoadRefusesPastBudgets: modules past a table, memory or compilation budget are
// refused at Load, quickly, with an error naming what and the limit.
func TestLoadRefusesPastBudgets(t *testing.T) {
	withTables := func(tables ...[]byte) []byte {
		m := genGuest(nil)
		m.tables = tables
		return m.bytes()
	}
	passive := func(n int) []byte {
		m := genGuest(nil)
		seg := appendU32([]byte{0x01, 0x00}, uint32(n)) // passive, funcref indexes
		seg = append(seg, bytes.Repeat([]byte{genRun}, n)...)
		m.elems = append(m.elems, seg)
		return m.bytes()
	}
	active := func(n int) []byte {
		m := genGuest(nil)
		m.tables = append(m.tables, genTable(refFunc, 0, 0, false))
		seg := appendU32([]byte{0x00, 0x41, 0x00, 0x0b}, uint32(n)) // table 0 at 0
		seg = append(seg, bytes.Repeat([]byte{genRun}, n)...)
		m.elems = append(m.elems, seg)
		return m.bytes()
	}
	funcs := func(n int, body []byte) []byte {
		m := genGuest(nil)
		for range n {
			m.addFunc(0, "", body)
		}
		return m.bytes()
	}
	locals := func(n uint32) []byte {
		return append(append(appendU32([]byte{0x01}, n), 0x7f), 0x0b)
	}
	globals := func(n int) []byte {
		m := genGuest(nil)
		for range n {
			m.globals = append(m.globals, []byte{0x7f, 0x00, 0x41, 0x00, 0x0b})
		}
		return m.bytes()
	}
	importedTable := func() []byte {
		m := genGuest(nil)
		m.imports = append(m.imports, append(append(genName("env"), genName("table")...), 0x01, refFunc, 0x00, 0x00))
		return m.bytes()
	}
	bigData := func(n int) []byte {
		m := genGuest(nil)
		m.memory = []byte{0x00, 64}
		m.datas = append(m.datas, genActiveData(4096, make([]byte, n)))
		return m.bytes()
	}
	memory := func(min uint32) []byte {
		m := genGuest(nil)
		m.memory = appendU32([]byte{0x00}, min)
		return m.bytes()
	}
	tables := make([][]byte, maxTables+1)
	for i := range tables {
		tables[i] = genTable(refExtern, 0, 0, false)
	}
	tests := []struct {
		name string
		opts Options
		code []byte
		want []string
	}{
		{"table min 1e8", Options{}, withTables(genTable(refFunc, 100_000_000, 0, false)),
			[]string{"table 0 declares an initial size of 100000000 elements, above the limit of 65536 elements per table"}},
		{"externref table max 1e8", Options{}, withTables(genTable(refFunc, 0, 1, true), genTable(refExtern, 0, 100_000_000, true)),
			[]string{"table 1 declares a maximum of 100000000 elements, above the limit of 65536"}},
		{"table above a configured cap", Options{MaxTableElements: 1000}, withTables(genTable(refFunc, 1001, 0, false)),
			[]string{"table 0 declares an initial size of 1001 elements, above the limit of 1000"}},
		{"many tables", Options{}, withTables(tables...), []string{"module defines 101 tables, above the limit of 100"}},
		{"imported table", Options{}, importedTable(), []string{"imports 1 tables; the host provides none"}},
		{"passive element segment", Options{}, passive(100_000),
			[]string{"element segment 0 holds 100000 entries, above the limit of 65536 elements per table"}},
		{"active element segment", Options{}, active(65_537), []string{"element segment 0 holds 65537 entries"}},
		{"element segments past the memory cap", Options{Limits: sandbox.Limits{MaxMemoryPages: 8}}, passive(40_000),
			[]string{"tables and element segments need 10 pages (640 KiB) of memory, above the limit of 8 pages"}},
		{"tables past the memory cap", Options{Limits: sandbox.Limits{MaxMemoryPages: 4}}, withTables(genTable(refFunc, 65536, 0, false)),
			[]string{"need 16 pages (1 MiB) of memory, above the limit of 4 pages (256 KiB)"}},
		{"tables and memory past the memory cap", Options{Limits: sandbox.Limits{MaxMemoryPages: 16}},
			withTables(genTable(refFunc, 65536, 0, false), genTable(refFunc, 0, 0, false)),
			[]string{"initial memory of 1 pages (64 KiB), above the 0 pages left by the limit of 16 pages"}},
		{"globals", Options{}, globals(maxGlobals + 1), []string{"module defines 10001 globals, above the limit of 10000"}},
		{"memory min", Options{}, memory(2000), []string{"initial memory of 2000 pages (125 MiB), above the limit of 1024 pages (64 MiB)"}},
		{"huge data segment", Options{Compile: CompileLimits{MaxModuleBytes: 1 << 20}}, bigData(2 << 20),
			[]string{"module of 2097", "bytes, above the limit of 1048576 bytes"}},
		{"100,000 nested blocks", Options{}, genGuest(genNested(100_000)).bytes(),
			[]string{"function 3 has more than 5000 blocks and branches, the limit"}},
		{"blocks past a configured limit", Options{Compile: CompileLimits{MaxBlocks: 10}}, genGuest(genNested(11)).bytes(),
			[]string{"function 3 has more than 10 blocks and branches"}},
		{"1,000,000 functions", Options{}, funcs(1_000_000, []byte{0x00, 0x0b}),
			[]string{"module defines 1000003 functions, above the limit of 100000"}},
		{"huge function body", Options{}, genGuest(append(append([]byte{0x00}, bytes.Repeat([]byte{0x01}, 2<<20)...), 0x0b)).bytes(),
			[]string{"function 3 has a body of 2097154 bytes, above the limit of 1048576 bytes"}},
		{"locals", Options{}, genGuest(locals(60_000)).bytes(), []string{"function 3 declares more than 50000 locals, the limit"}},
		{"module locals", Options{}, funcs(30, locals(40_000)), []string{"brings the module's locals past 1048576, the limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.NoDiskCache = true
			e := newEngine(t, tt.opts)
			_, err := loadWithin(t, e, sandbox.Source{Name: "hostile.wasm", Code: tt.code})
			if err == nil {
				t.Fatalf("got nil error, want one containing %q", tt.want)
			}
			if !scripthost.IsLogic(err) {
				t.Errorf("got class %s, want logic (%v)", scripthost.ClassOf(err), err)
			}
			for _, w := range append(tt.want, "wasm: load hostile.wasm: ") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestGuestsWithinBudgets: the modules built with each SDK load under the default
// budgets, and their tables are counted for their initial size (they never grow one).
func TestGuestsWithinBudgets(t *testing.T) {
	for name, code := range map[string][]byte{
		"rust":           committedModule(t, rustConformance),
		"assemblyscript": committedModule(t, ascConformance),
	} {
		t.Run(name, func(t *testing.T) {
			info, err := inspect(code, defaultBudgets)
			if err != nil {
				t.Fatal(err)
			}
			_, rw, err := instrument(code, defaultBudgets)
			if err != nil {
				t.Fatal(err)
			}
			if rw.growsTables {
				t.Error("got a table.grow, want none")
			}
			if got := info.tablePages(rw.growsTables); got != 1 {
				t.Errorf("got %d pages counted for the tables, want 1", got)
			}
		})
	}
}

// slowCompile is a module the budgets admit whose compilation takes long: 64
// functions of 4,000 nested blocks, each compiled in about half a second (wazero's
// compile time grows with the square of a function's blocks), far more under the
// race detector.
func slowCompile() []byte {
	m := genGuest(nil)
	for range 64 {
		m.addFunc(0, "", genNested(4000))
	}
	return m.bytes()
}

// TestCompileTimeout: a compilation past Compile.Timeout fails the Load with an error
// naming the limit, and the engine goes on loading other modules.
func TestCompileTimeout(t *testing.T) {
	e := newEngine(t, Options{NoDiskCache: true, Compile: CompileLimits{Timeout: time.Millisecond}})
	_, err := loadWithin(t, e, sandbox.Source{Name: "slow.wasm", Code: slowCompile()})
	hostileCase{code: scripthost.CodeInvalidWorkflow, want: []string{"wasm: load slow.wasm: compile: took longer than 1ms, the limit"}}.check(t, err)

	e = newEngine(t, Options{NoDiskCache: true})
	p, err := loadWithin(t, e, readFixture(t, "good.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if _, err := invokeWithin(t, p, sandbox.Invocation{Function: "hello"}); err != nil {
		t.Fatal(err)
	}
}

// TestHostileLoadDoesNotBlockNeighbour loads a hostile module in one goroutine and a
// well-behaved one, which it then invokes, in another. The well-behaved run must
// finish while the hostile module is still being compiled or once it was refused. A
// module of 100,000 nested blocks must then be refused on its own (it took a minute
// to compile before the budgets, holding a compile worker that long); the Load of a
// module the budgets admit that compiles for long is cancelled, and must end with the
// cancellation.
func TestHostileLoadDoesNotBlockNeighbour(t *testing.T) {
	for _, tt := range []struct {
		name   string
		code   []byte
		cancel bool
		want   string // in the hostile Load's error, unless cancel
	}{
		{"nested blocks", genGuest(genNested(100_000)).bytes(), false, "function 3 has more than 5000 blocks and branches"},
		{"slow compile", slowCompile(), true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, Options{NoDiskCache: true})
			goodSrc := readFixture(t, "good.wasm")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hostile := make(chan error, 1)
			go func() {
				p, err := e.Load(ctx, sandbox.Source{Name: "hostile.wasm", Code: tt.code})
				if err == nil {
					p.Close(context.Background())
				}
				hostile <- err
			}()
			good := make(chan error, 1)
			go func() {
				p, err := e.Load(context.Background(), goodSrc)
				if err != nil {
					good <- err
					return
				}
				defer p.Close(context.Background())
				res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "echo",
					Globals: sandbox.Globals{State: json.RawMessage(`[1]`)}})
				if err == nil && string(res.Value) != "[1]" {
					err = errors.New("got " + string(res.Value) + ", want [1]")
				}
				good <- err
			}()
			var hostileErr error
			hostileEnded := false
			select {
			case err := <-good:
				if err != nil {
					t.Fatalf("well-behaved run: %v", err)
				}
			case hostileErr = <-hostile:
				// Refused first: the well-behaved run must still finish.
				hostileEnded = true
				select {
				case err := <-good:
					if err != nil {
						t.Fatalf("well-behaved run: %v", err)
					}
				case <-time.After(liveness):
					t.Fatal("well-behaved run did not finish")
				}
			case <-time.After(liveness):
				t.Fatal("neither the well-behaved run nor the hostile load finished")
			}
			if tt.cancel {
				cancel()
			}
			if !hostileEnded {
				select {
				case hostileErr = <-hostile:
				case <-time.After(liveness):
					t.Fatal("hostile load did not end")
				}
			}
			switch {
			case hostileErr == nil:
				t.Fatal("hostile load: got nil error, want a refusal or the cancellation")
			case tt.cancel && !errors.Is(hostileErr, context.Canceled):
				t.Errorf("hostile load: got %v, want an error wrapping context.Canceled", hostileErr)
			case !tt.cancel && !strings.Contains(hostileErr.Error(), tt.want):
				t.Errorf("hostile load: got %v, want it to contain %q", hostileErr, tt.want)
			}
		})
	}
}

// loadGen loads m, closed with the test.
func loadGen(t testing.TB, e *Engine, name string, m *genModule) *Program {
	t.Helper()
	p, err := loadWithin(t, e, sandbox.Source{Name: name, Code: m.bytes()})
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// loadWithin loads src, failing the test when Load does not return within liveness.
func loadWithin(t testing.TB, e *Engine, src sandbox.Source) (*Program, error) {
	t.Helper()
	type result struct {
		p   *Program
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := e.load(context.Background(), src)
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		return r.p, r.err
	case <-time.After(liveness):
		t.Fatalf("Load %s did not return", src.Name)
		return nil, nil
	}
}

// invokeWithin invokes p, failing the test when Invoke does not return within
// liveness.
func invokeWithin(t testing.TB, p *Program, inv sandbox.Invocation) (sandbox.Result, error) {
	t.Helper()
	type result struct {
		res sandbox.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := p.Invoke(context.Background(), inv)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-time.After(liveness):
		t.Fatalf("Invoke %s did not return", inv.Function)
		return sandbox.Result{}, nil
	}
}
