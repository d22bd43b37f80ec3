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

// inspect checks a module binary's header and the layout of its sections (the one
// walk of them, splitSections, that instrument uses too) and reads its memory section.
// It does not validate the rest: wazero does that when it compiles.
func inspect(code []byte) (moduleInfo, error) {
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
		if sec.id == sectionMemory {
			if err := info.readMemorySection(&reader{b: code[:sec.end], off: sec.off}); err != nil {
				return info, fmt.Errorf("memory section: %w", err)
			}
		}
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
