package wasm

import "bytes"

// genModule builds a scripthost guest in the binary format, for the hostile modules
// too large to commit as WAT (a hundred thousand nested blocks, a million functions)
// or made of one shape repeated. The zero value plus base is a valid guest whose
// "run" export returns "1"; the fields add to it.
type genModule struct {
	// types are function types, encoded; base sets 0: () -> (), 1: () -> (i32),
	// 2: (i32, i32) -> ().
	types [][]byte
	// imports are import entries, encoded. base imports scripthost.return_value as
	// function 0.
	imports [][]byte
	// funcs are the type indexes of the module's functions; codes their bodies
	// (locals and instructions, the final end included, without the size).
	funcs []uint32
	codes [][]byte
	// tables, globals, exports and elems are entries of their sections, encoded.
	tables, globals, exports, elems [][]byte
	// memory is the memory's limits, encoded.
	memory []byte
	// datas are data segments, encoded.
	datas [][]byte
}

// Indexes of the functions base defines.
const (
	genReturnValue = 0 // imported
	genABI         = 1
	genDescribe    = 2
	genRun         = 3
	genDefOffset   = 1024
	genOneOffset   = 2048
)

// genDefinition is the workflow definition of a generated guest.
const genDefinition = `{"producers":{"run":{"handler":"run"}}}`

// genGuest returns a guest whose "run" has the body run (locals and instructions, the
// final end included); nil means one that returns "1".
func genGuest(run []byte) *genModule {
	if run == nil {
		run = genReturnOne()
	}
	m := &genModule{
		types:   [][]byte{{0x60, 0, 0}, {0x60, 0, 1, 0x7f}, {0x60, 2, 0x7f, 0x7f, 0}},
		imports: [][]byte{append(append(genName("scripthost"), genName("return_value")...), 0x00, 2)},
		memory:  []byte{0x00, 1},
	}
	m.exports = append(m.exports, genExport("memory", 0x02, 0))
	m.datas = append(m.datas, genActiveData(genDefOffset, []byte(genDefinition)), genActiveData(genOneOffset, []byte("1")))
	m.addFunc(1, "scripthost_abi_version", []byte{0x00, 0x41, 0x01, 0x0b})
	m.addFunc(0, "scripthost_describe", genCallReturnValue(genDefOffset, len(genDefinition)))
	m.addFunc(0, "run", run)
	return m
}

// genReturnOne is a body that passes "1" to return_value.
func genReturnOne() []byte { return genCallReturnValue(genOneOffset, 1) }

func genCallReturnValue(off, n int) []byte {
	b := []byte{0x00, 0x41}
	b = appendS32(b, int32(off))
	b = append(b, 0x41)
	b = appendS32(b, int32(n))
	b = append(b, opCall, genReturnValue, 0x0b)
	return b
}

// addFunc adds a function of type typ with body code, exported as name unless name is
// empty, and returns its index.
func (m *genModule) addFunc(typ uint32, name string, code []byte) uint32 {
	idx := uint32(1 + len(m.funcs)) // after the one imported function
	m.funcs = append(m.funcs, typ)
	m.codes = append(m.codes, code)
	if name != "" {
		m.exports = append(m.exports, genExport(name, 0x00, idx))
	}
	return idx
}

// bytes encodes the module.
func (m *genModule) bytes() []byte {
	out := append([]byte(nil), wasmMagic...)
	out = append(out, 1, 0, 0, 0)
	section := func(id byte, entries [][]byte) {
		if len(entries) == 0 {
			return
		}
		body := appendU32(nil, uint32(len(entries)))
		for _, e := range entries {
			body = append(body, e...)
		}
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	funcs := make([][]byte, len(m.funcs))
	for i, t := range m.funcs {
		funcs[i] = appendU32(nil, t)
	}
	codes := make([][]byte, len(m.codes))
	for i, c := range m.codes {
		codes[i] = append(appendU32(nil, uint32(len(c))), c...)
	}
	var mems [][]byte
	if m.memory != nil {
		mems = [][]byte{m.memory}
	}
	section(sectionType, m.types)
	section(sectionImport, m.imports)
	section(sectionFunction, funcs)
	section(sectionTable, m.tables)
	section(sectionMemory, mems)
	section(sectionGlobal, m.globals)
	section(sectionExport, m.exports)
	section(sectionElement, m.elems)
	section(sectionCode, codes)
	section(sectionData, m.datas)
	return out
}

func genName(s string) []byte { return append(appendU32(nil, uint32(len(s))), s...) }

func genExport(name string, kind byte, idx uint32) []byte {
	return appendU32(append(genName(name), kind), idx)
}

func genActiveData(off int, data []byte) []byte {
	b := []byte{0x00, 0x41}
	b = appendS32(b, int32(off))
	b = append(b, 0x0b)
	b = appendU32(b, uint32(len(data)))
	return append(b, data...)
}

// genTable is a table entry: reference type rt (0x70 funcref, 0x6f externref), min
// elements, and max when hasMax.
func genTable(rt byte, min uint32, max uint32, hasMax bool) []byte {
	if hasMax {
		return appendU32(appendU32([]byte{rt, 0x01}, min), max)
	}
	return appendU32([]byte{rt, 0x00}, min)
}

// genNested is a body of depth nested empty blocks, then run's return of "1".
func genNested(depth int) []byte {
	b := bytes.Repeat([]byte{0x02, 0x40}, depth)
	b = append([]byte{0x00}, b...)
	b = append(b, bytes.Repeat([]byte{0x0b}, depth)...)
	return append(b, genReturnOne()[1:]...)
}
