package wasm

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/api"
)

// moduleInfo is what the engine reads from a module binary before wazero compiles it.
// wazero silently lowers a declared maximum memory to the runtime's limit; the engine
// refuses such a module instead, so it reads the declared limits itself.
type moduleInfo struct {
	hasMemory bool
	memMin    uint32
	memMax    uint32
	hasMax    bool
	// tables are the module's tables; passiveElems counts the entries of its passive
	// element segments, which wazero copies into every instance.
	tables       []tableInfo
	passiveElems uint64
}

// tableInfo is one table of a module. Its max is the cap when the module declares
// none: the rewrite sets it (rewriteTables).
type tableInfo struct {
	min, max uint32
	// limits and end are the offsets in the binary of its limits and of the end of
	// its entry.
	limits, end int
}

var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// inspect checks a module binary's header and the layout of its sections (the one
// walk of them, splitSections, that instrument uses too), reads its memory and table
// sections, and refuses a module past the budgets b: its functions, globals and
// tables, a table larger than the cap or an element segment longer than a table may
// be. (load checks the module's size before, instrument the function bodies after.)
// It does not validate the rest: wazero does that when it compiles.
func inspect(code []byte, b budgets) (moduleInfo, error) {
	var info moduleInfo
	if len(code) < 8 || !bytes.Equal(code[:4], wasmMagic) {
		return info, errors.New("not a WebAssembly binary (bad magic number)")
	}
	if v := code[4:8]; !bytes.Equal(v, []byte{1, 0, 0, 0}) {
		return info, fmt.Errorf("unsupported WebAssembly binary version %x", v)
	}
	secs, err := splitSections(code)
	if err != nil {
		return info, err
	}
	for _, sec := range secs {
		r := &reader{b: code[:sec.end], off: sec.off}
		var err error
		switch sec.id {
		case sectionMemory:
			err = info.readMemorySection(r)
		case sectionTable:
			info.tables, err = readTables(r, b.tableElements)
		case sectionElement:
			info.passiveElems, err = readElements(r, b.tableElements)
		case sectionFunction:
			var n uint32
			if n, err = r.u32(); err == nil && int64(n) > int64(b.functions) {
				err = refusal(fmt.Sprintf("module defines %d functions, above the limit of %d", n, b.functions))
			}
		case sectionGlobal:
			var n uint32
			if n, err = r.u32(); err == nil && n > maxGlobals {
				err = refusal(fmt.Sprintf("module defines %d globals, above the limit of %d", n, maxGlobals))
			}
		}
		if err != nil {
			if _, ok := err.(refusal); ok {
				return info, err
			}
			return info, fmt.Errorf("section %d: %w", sec.id, err)
		}
	}
	return info, nil
}

// readTables reads a table section, refusing a table whose initial size or declared
// maximum is above capElems, and more than maxTables tables. wazero allocates a
// table's initial size at instantiation and grows a table without a maximum as far
// as table.grow asks (2*10^8 elements took 4.8 GB), so a table without one gets
// capElems from the rewrite.
func readTables(r *reader, capElems uint32) ([]tableInfo, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if n > maxTables {
		return nil, refusal(fmt.Sprintf("module defines %d tables, above the limit of %d", n, maxTables))
	}
	tables := make([]tableInfo, 0, n)
	for i := uint32(0); i < n; i++ {
		var t tableInfo
		c, err := r.byte()
		if err != nil {
			return nil, err
		}
		init := c == 0x40 // a table with an initializer (function references)
		if init {
			if _, err := r.byte(); err != nil {
				return nil, err
			}
			if c, err = r.byte(); err != nil {
				return nil, err
			}
		}
		if err := r.skipRefType(c); err != nil {
			return nil, fmt.Errorf("table %d: %w", i, err)
		}
		t.limits = r.off
		flags, err := r.byte()
		if err != nil {
			return nil, err
		}
		if flags > 1 {
			return nil, fmt.Errorf("table %d: limits flags %#x, want 0 or 1", i, flags)
		}
		if t.min, err = r.u32(); err != nil {
			return nil, err
		}
		t.max = capElems
		if flags == 1 {
			if t.max, err = r.u32(); err != nil {
				return nil, err
			}
			if t.max > capElems {
				return nil, refusal(fmt.Sprintf("table %d declares a maximum of %d elements, above the limit of %d elements per table",
					i, t.max, capElems))
			}
		}
		if t.min > capElems {
			return nil, refusal(fmt.Sprintf("table %d declares an initial size of %d elements, above the limit of %d elements per table",
				i, t.min, capElems))
		}
		if t.min > t.max {
			return nil, fmt.Errorf("table %d: initial size %d above its maximum %d", i, t.min, t.max)
		}
		if init {
			if err := r.skipConstExpr(); err != nil {
				return nil, fmt.Errorf("table %d: %w", i, err)
			}
		}
		t.end = r.off
		tables = append(tables, t)
	}
	return tables, nil
}

// skipRefType moves past a reference type whose first byte, c, was read: funcref or
// externref, or a typed reference (0x63, 0x64) and its heap type.
func (r *reader) skipRefType(c byte) error {
	switch c {
	case 0x70, 0x6f:
		return nil
	case 0x63, 0x64:
		return r.skipLEB(5)
	}
	return fmt.Errorf("reference type %#x", c)
}

// readElements reads an element section, refusing a segment of more than capElems
// entries (no table can hold them), and returns how many entries its passive
// segments hold: wazero copies those into every instance.
func readElements(r *reader, capElems uint32) (passive uint64, err error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	for i := uint32(0); i < n; i++ {
		form, err := r.u32()
		if err != nil {
			return 0, err
		}
		if form > 7 {
			return 0, fmt.Errorf("element segment %d: form %d", i, form)
		}
		// The forms: bit 0 passive or declarative (bit 1 says which), else active;
		// bit 1 of an active one: a table index follows; bit 2: the entries are
		// expressions (after a reference type) rather than function indexes (after an
		// element kind, a zero byte).
		active := form&1 == 0
		if active && form&2 != 0 {
			if _, err := r.u32(); err != nil {
				return 0, err
			}
		}
		if active {
			if err := r.skipConstExpr(); err != nil {
				return 0, fmt.Errorf("element segment %d: %w", i, err)
			}
		}
		exprs := form&4 != 0
		if form&3 != 0 { // an element kind or a reference type
			c, err := r.byte()
			if err != nil {
				return 0, err
			}
			if exprs {
				if err := r.skipRefType(c); err != nil {
					return 0, fmt.Errorf("element segment %d: %w", i, err)
				}
			}
		}
		count, err := r.u32()
		if err != nil {
			return 0, err
		}
		if count > capElems {
			return 0, refusal(fmt.Sprintf("element segment %d holds %d entries, above the limit of %d elements per table",
				i, count, capElems))
		}
		if int(count) > len(r.b)-r.off {
			return 0, fmt.Errorf("element segment %d: %w: %d entries", i, errPastEnd, count)
		}
		for j := uint32(0); j < count; j++ {
			if exprs {
				err = r.skipConstExpr()
			} else {
				_, err = r.u32()
			}
			if err != nil {
				return 0, fmt.Errorf("element segment %d: %w", i, err)
			}
		}
		if form&3 == 1 {
			passive += uint64(count)
		}
	}
	return passive, nil
}

func (info *moduleInfo) readMemorySection(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	if n > 1 {
		return fmt.Errorf("%d memories; the ABI needs exactly one", n)
	}
	if n == 0 {
		return nil
	}
	flags, err := r.byte()
	if err != nil {
		return err
	}
	info.hasMemory = true
	if info.memMin, err = r.u32(); err != nil {
		return err
	}
	if flags&1 != 0 {
		info.hasMax = true
		if info.memMax, err = r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// checkMemory refuses a module whose declared memory does not fit under capPages, or
// does not fit beside its tables, counted for tablePages.
func (info moduleInfo) checkMemory(capPages, tablePages uint32) error {
	if tablePages > capPages {
		return fmt.Errorf("module's tables and element segments need %d pages (%s) of memory, above the limit of %d pages (%s)",
			tablePages, pagesString(tablePages), capPages, pagesString(capPages))
	}
	if !info.hasMemory {
		return nil
	}
	if info.hasMax && info.memMax > capPages {
		return fmt.Errorf("module declares a maximum memory of %d pages (%s), above the limit of %d pages (%s)",
			info.memMax, pagesString(info.memMax), capPages, pagesString(capPages))
	}
	if info.memMin > capPages {
		return fmt.Errorf("module declares an initial memory of %d pages (%s), above the limit of %d pages (%s)",
			info.memMin, pagesString(info.memMin), capPages, pagesString(capPages))
	}
	if info.memMin > capPages-tablePages {
		return fmt.Errorf("module declares an initial memory of %d pages (%s), above the %d pages left by the limit of %d pages (%s) once its tables' %d are counted",
			info.memMin, pagesString(info.memMin), capPages-tablePages, capPages, pagesString(capPages), tablePages)
	}
	return nil
}

func pagesString(pages uint32) string {
	b := uint64(pages) << 16
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d KiB", b>>10)
}

type reader struct {
	b   []byte
	off int
}

var errTruncated = errors.New("truncated binary")

func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.off]
	r.off++
	return c, nil
}

// u32 reads an unsigned LEB128 value of at most 32 bits.
func (r *reader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift == 28 && c > 0x0f {
			return 0, errors.New("LEB128 value overflows 32 bits")
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("LEB128 value too long")
}

// allI32 reports whether types is n i32s.
func allI32(types []api.ValueType, n int) bool {
	if len(types) != n {
		return false
	}
	for _, t := range types {
		if t != api.ValueTypeI32 {
			return false
		}
	}
	return true
}

// signature formats a function type as "(i32, i32) -> (i32)".
func signature(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return name(params) + " -> " + name(results)
}

func i32Signature(params, results int) string {
	p := make([]api.ValueType, params)
	r := make([]api.ValueType, results)
	for i := range p {
		p[i] = api.ValueTypeI32
	}
	for i := range r {
		r[i] = api.ValueTypeI32
	}
	return signature(p, r)
}
