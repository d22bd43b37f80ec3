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
}

var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// Section ids of the WebAssembly binary format.
const (
	sectionMemory = 5
)

// inspect reads the memory section of a module binary. It does not validate the rest:
// wazero does that when it compiles.
func inspect(code []byte) (moduleInfo, error) {
	var info moduleInfo
	if len(code) < 8 || !bytes.Equal(code[:4], wasmMagic) {
		return info, errors.New("not a WebAssembly binary (bad magic number)")
	}
	if v := code[4:8]; !bytes.Equal(v, []byte{1, 0, 0, 0}) {
		return info, fmt.Errorf("unsupported WebAssembly binary version %x", v)
	}
	r := &reader{b: code, off: 8}
	for r.off < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return info, err
		}
		size, err := r.u32()
		if err != nil {
			return info, fmt.Errorf("section %d: %w", id, err)
		}
		end := r.off + int(size)
		if end > len(r.b) || end < r.off {
			return info, fmt.Errorf("section %d: size %d past the end of the binary", id, size)
		}
		if id == sectionMemory {
			sec := &reader{b: r.b[:end], off: r.off}
			if err := info.readMemorySection(sec); err != nil {
				return info, fmt.Errorf("memory section: %w", err)
			}
		}
		r.off = end
	}
	return info, nil
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

// checkMemory refuses a module whose declared memory does not fit under capPages.
func (info moduleInfo) checkMemory(capPages uint32) error {
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

// Section ids used by instrument.
const (
	sectionImport = 2
	sectionGlobal = 6
	sectionCode   = 10
)

// sectionRank orders the non-custom sections as the binary format requires (the tag
// section of the exception-handling proposal sits between memory and global).
var sectionRank = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// checkEvery is how many function entries pass between two termination checks.
const checkEvery = 1000

// instrument makes every function call a place where a timed-out or cancelled guest
// stops. wazero checks for a closed module only at loop heads, so a guest recursing
// without loops (fib(60): a shallow stack and 10^12 calls) would never see its
// timeout and would hold up the Go garbage collector for as long as it ran.
//
// It adds a mutable i32 global, a countdown, and a prologue to every function body
// that decrements it and, when it reaches zero, runs an empty loop (where wazero checks)
// and resets it to checkEvery. The check leaves native code for Go, so doing it on
// every call would cost about 45ns a call; once in checkEvery costs a few
// instructions. The prologue closes its blocks before the body starts, so branch
// depths inside the body are unchanged; nothing else in the module moves.
func instrument(code []byte) ([]byte, error) {
	type section struct {
		id         byte
		start, off int // header start, content start
		end        int
	}
	var secs []section
	r := &reader{b: code, off: 8}
	for r.off < len(r.b) {
		start := r.off
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		end := r.off + int(size)
		if end > len(r.b) || end < r.off {
			return nil, fmt.Errorf("section %d: size %d past the end of the binary", id, size)
		}
		secs = append(secs, section{id: id, start: start, off: r.off, end: end})
		r.off = end
	}
	var imported, defined uint32
	hasGlobal := false
	for _, sec := range secs {
		var err error
		switch sec.id {
		case sectionImport:
			imported, err = importedGlobals(&reader{b: code[:sec.end], off: sec.off})
		case sectionGlobal:
			hasGlobal = true
			defined, err = (&reader{b: code[:sec.end], off: sec.off}).u32()
		}
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", sec.id, err)
		}
	}
	if imported > 0 {
		return nil, fmt.Errorf("module imports %d globals; the host provides none", imported)
	}
	counter := defined

	newGlobal := []byte{0x7f, 0x01, 0x41} // i32, mutable, i32.const checkEvery end
	newGlobal = appendS32(newGlobal, checkEvery)
	newGlobal = append(newGlobal, 0x0b)
	appendSection := func(out []byte, id byte, body []byte) []byte {
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		return append(out, body...)
	}

	out := make([]byte, 0, len(code)+len(code)/8)
	out = append(out, code[:8]...)
	inserted := hasGlobal
	for _, sec := range secs {
		if !inserted && sec.id != 0 && sectionRank[sec.id] > sectionRank[sectionGlobal] {
			out = appendSection(out, sectionGlobal, append(appendU32(nil, 1), newGlobal...))
			inserted = true
		}
		switch sec.id {
		case sectionGlobal:
			body := appendU32(nil, defined+1)
			r := &reader{b: code[:sec.end], off: sec.off}
			_, _ = r.u32()
			body = append(body, code[r.off:sec.end]...)
			out = appendSection(out, sectionGlobal, append(body, newGlobal...))
		case sectionMemory:
			body, err := dropMemoryMax(code[sec.off:sec.end])
			if err != nil {
				return nil, fmt.Errorf("memory section: %w", err)
			}
			out = appendSection(out, sectionMemory, body)
		case sectionCode:
			body, err := instrumentCode(&reader{b: code[:sec.end], off: sec.off}, prologue(counter))
			if err != nil {
				return nil, fmt.Errorf("code section: %w", err)
			}
			out = appendSection(out, sectionCode, body)
		default:
			out = append(out, code[sec.start:sec.end]...)
		}
	}
	if !inserted {
		out = appendSection(out, sectionGlobal, append(appendU32(nil, 1), newGlobal...))
	}
	return out, nil
}

// dropMemoryMax rewrites a memory section so that its memory declares no maximum.
// wazero refuses a memory.grow past the declared maximum (or past the runtime's page
// limit) without asking the allocator, so the engine could not tell a guest that died
// of a refused growth from any other trap. Without a declared maximum every growth up
// to 4 GiB reaches linearMemory.Reallocate, which enforces the smaller of the declared
// maximum and the invocation's cap and records the refusal. A shared memory (which
// needs its maximum) is left alone.
func dropMemoryMax(sec []byte) ([]byte, error) {
	r := &reader{b: sec}
	n, err := r.u32()
	if err != nil || n != 1 {
		return sec, err
	}
	flags, err := r.byte()
	if err != nil {
		return nil, err
	}
	if flags != 0x01 {
		return sec, nil
	}
	minPages, err := r.u32()
	if err != nil {
		return nil, err
	}
	if _, err := r.u32(); err != nil {
		return nil, err
	}
	out := append(appendU32(nil, 1), 0x00)
	out = appendU32(out, minPages)
	return append(out, sec[r.off:]...), nil
}

// prologue is the countdown described on instrument, for the global at index g:
//
//	global.get g; i32.eqz
//	if; loop; end; i32.const checkEvery; global.set g; end
//	global.get g; i32.const 1; i32.sub; global.set g
func prologue(g uint32) []byte {
	b := append([]byte{0x23}, appendU32(nil, g)...)
	b = append(b, 0x45, 0x04, 0x40, 0x03, 0x40, 0x0b, 0x41)
	b = appendS32(b, checkEvery)
	b = append(b, 0x24)
	b = appendU32(b, g)
	b = append(b, 0x0b, 0x23)
	b = appendU32(b, g)
	b = append(b, 0x41, 0x01, 0x6b, 0x24)
	return appendU32(b, g)
}

// importedGlobals counts the global imports of an import section.
func importedGlobals(r *reader) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	var globals, tables uint32
	skipName := func() error {
		l, err := r.u32()
		if err != nil {
			return err
		}
		if r.off+int(l) > len(r.b) {
			return errTruncated
		}
		r.off += int(l)
		return nil
	}
	limits := func() error {
		flags, err := r.byte()
		if err != nil {
			return err
		}
		if _, err := r.u32(); err != nil {
			return err
		}
		if flags&1 != 0 {
			_, err = r.u32()
		}
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := skipName(); err != nil {
			return 0, err
		}
		if err := skipName(); err != nil {
			return 0, err
		}
		kind, err := r.byte()
		if err != nil {
			return 0, err
		}
		switch kind {
		case 0: // function: type index
			_, err = r.u32()
		case 1: // table: reference type, limits
			tables++
			if _, err = r.byte(); err == nil {
				err = limits()
			}
		case 2: // memory: limits
			err = limits()
		case 3: // global: value type, mutability
			globals++
			if _, err = r.byte(); err == nil {
				_, err = r.byte()
			}
		case 4: // tag: attribute, type index
			if _, err = r.byte(); err == nil {
				_, err = r.u32()
			}
		default:
			return 0, fmt.Errorf("import %d: unknown kind %#x", i, kind)
		}
		if err != nil {
			return 0, err
		}
	}
	if tables > 0 {
		return 0, fmt.Errorf("module imports %d tables; the host provides none", tables)
	}
	return globals, nil
}

func instrumentCode(r *reader, pro []byte) ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	out := appendU32(make([]byte, 0, len(r.b)-r.off+int(n)*(len(pro)+2)), n)
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		end := r.off + int(size)
		if end > len(r.b) || end < r.off {
			return nil, fmt.Errorf("function %d: size %d past the end of the section", i, size)
		}
		fr := &reader{b: r.b[:end], off: r.off}
		groups, err := fr.u32()
		if err != nil {
			return nil, err
		}
		for g := uint32(0); g < groups; g++ {
			if _, err := fr.u32(); err != nil {
				return nil, err
			}
			t, err := fr.byte()
			if err != nil {
				return nil, err
			}
			if t < 0x6f || t > 0x7f {
				return nil, fmt.Errorf("function %d: unsupported local type %#x", i, t)
			}
		}
		out = appendU32(out, size+uint32(len(pro)))
		out = append(out, r.b[r.off:fr.off]...)
		out = append(out, pro...)
		out = append(out, r.b[fr.off:end]...)
		r.off = end
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%d trailing bytes", len(r.b)-r.off)
	}
	return out, nil
}

// appendS32 appends v as a signed LEB128 value (the immediate of i32.const).
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
