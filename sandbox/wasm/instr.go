package wasm

import (
	"errors"
	"fmt"
)

// instr is one instruction of a function body: its opcode, the sub-opcode after a
// 0xfc, 0xfd or 0xfe prefix, and the byte range [start, end) it occupies.
type instr struct {
	op         byte
	sub        uint32
	start, end int
}

// Opcodes the engine looks for when it rewrites or inspects a body.
const (
	opBlock      = 0x02
	opLoop       = 0x03
	opElse       = 0x05
	opBr         = 0x0c
	opBrTable    = 0x0e
	opCall       = 0x10
	opMemoryGrow = 0x40
	opTableSet   = 0x26
	prefixMisc   = 0xfc
	prefixSIMD   = 0xfd
	prefixAtomic = 0xfe

	miscDataDrop  = 9
	miscTableInit = 12
	miscElemDrop  = 13
	miscTableCopy = 14
	miscTableGrow = 15
	miscTableFill = 17
)

// imm is the shape of an instruction's immediates.
type imm uint8

const (
	immBad        imm = iota // not an instruction the engine knows
	immNone                  // no immediates
	immBlock                 // a block type
	immIdx                   // one u32 index
	immIdx2                  // two u32 indexes
	immBrTable               // a vector of label indexes and a default
	immMemarg                // alignment and offset
	immMemargLane            // memarg and a lane byte
	immS32                   // signed LEB128, 32 bits
	immS64                   // signed LEB128, 64 bits
	immBytes4                // f32
	immBytes8                // f64
	immBytes16               // v128.const, i8x16.shuffle
	immLane                  // one lane byte
	immSelectT               // a vector of value types
	immRefType               // one reference type byte
	immFenceByte             // atomic.fence's reserved byte
	immPrefix                // a prefix: the sub-opcode selects from another table
)

// opImm is the immediate shape of each single-byte opcode: the core instruction set
// with the extensions wazero implements (sign extension, reference types, tail calls).
// Exception handling is not in it: the engine does not enable it in wazero either.
var opImm = func() (t [256]imm) {
	set := func(from, to int, k imm) {
		for op := from; op <= to; op++ {
			t[op] = k
		}
	}
	set(0x00, 0x01, immNone)   // unreachable, nop
	set(0x02, 0x04, immBlock)  // block, loop, if
	set(0x05, 0x05, immNone)   // else
	set(0x0b, 0x0b, immNone)   // end
	set(0x0c, 0x0d, immIdx)    // br, br_if
	t[0x0e] = immBrTable       // br_table
	t[0x0f] = immNone          // return
	t[0x10] = immIdx           // call
	t[0x11] = immIdx2          // call_indirect: type, table
	t[0x12] = immIdx           // return_call
	t[0x13] = immIdx2          // return_call_indirect
	set(0x1a, 0x1b, immNone)   // drop, select
	t[0x1c] = immSelectT       // select t*
	set(0x20, 0x26, immIdx)    // local.*, global.*, table.get, table.set
	set(0x28, 0x3e, immMemarg) // loads and stores
	set(0x3f, 0x40, immIdx)    // memory.size, memory.grow: memory index
	t[0x41] = immS32           // i32.const
	t[0x42] = immS64           // i64.const
	t[0x43] = immBytes4        // f32.const
	t[0x44] = immBytes8        // f64.const
	set(0x45, 0xc4, immNone)   // numeric, sign extension
	t[0xd0] = immRefType       // ref.null
	t[0xd1] = immNone          // ref.is_null
	t[0xd2] = immIdx           // ref.func
	set(prefixMisc, prefixAtomic, immPrefix)
	return t
}()

// miscImm is the immediate shape of each 0xfc sub-opcode (saturating truncation, bulk
// memory, reference types).
func miscImm(sub uint32) imm {
	switch {
	case sub <= 7: // i32.trunc_sat_f32_s …
		return immNone
	case sub == 8: // memory.init: data, memory
		return immIdx2
	case sub == 9: // data.drop
		return immIdx
	case sub == 10: // memory.copy: memory, memory
		return immIdx2
	case sub == 11: // memory.fill
		return immIdx
	case sub == 12, sub == 14: // table.init: elem, table; table.copy: table, table
		return immIdx2
	case sub == 13, sub == 15, sub == 16, sub == 17: // elem.drop, table.grow/size/fill
		return immIdx
	}
	return immBad
}

// simdImm is the immediate shape of each 0xfd sub-opcode (fixed-width SIMD).
func simdImm(sub uint32) imm {
	switch {
	case sub <= 0x0b: // v128.load*, v128.store
		return immMemarg
	case sub == 0x0c, sub == 0x0d: // v128.const, i8x16.shuffle
		return immBytes16
	case sub >= 0x15 && sub <= 0x22: // extract_lane, replace_lane
		return immLane
	case sub >= 0x54 && sub <= 0x5b: // v128.load*_lane, v128.store*_lane
		return immMemargLane
	case sub == 0x5c, sub == 0x5d: // v128.load32_zero, v128.load64_zero
		return immMemarg
	case sub <= 0xff:
		return immNone
	}
	return immBad
}

// atomicImm is the immediate shape of each 0xfe sub-opcode (threads).
func atomicImm(sub uint32) imm {
	switch {
	case sub <= 0x02: // memory.atomic.notify, wait32, wait64
		return immMemarg
	case sub == 0x03: // atomic.fence
		return immFenceByte
	case sub >= 0x10 && sub <= 0x4e:
		return immMemarg
	}
	return immBad
}

var errUnknownOpcode = errors.New("unknown opcode")

// decodeBody walks the instructions of a function body, from the first instruction
// after the locals to the end of b, and calls fn on each. It checks only what it
// needs to find instruction boundaries; wazero validates the rest when it compiles.
func decodeBody(b []byte, off int, fn func(in instr) error) error {
	r := &reader{b: b, off: off}
	for r.off < len(r.b) {
		in, err := r.instr()
		if err != nil {
			return err
		}
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}

// skipConstExpr moves past a constant expression (a global's initial value, a
// segment's offset): instructions up to and including the first end.
func (r *reader) skipConstExpr() error {
	for {
		in, err := r.instr()
		if err != nil {
			return err
		}
		if in.op == 0x0b {
			return nil
		}
	}
}

// instr decodes the instruction at r.off and moves past it.
func (r *reader) instr() (instr, error) {
	in := instr{start: r.off}
	op, err := r.byte()
	if err != nil {
		return in, err
	}
	in.op = op
	k := opImm[op]
	if k == immPrefix {
		sub, err := r.u32()
		if err != nil {
			return in, fmt.Errorf("offset %d: %w", in.start, err)
		}
		in.sub = sub
		switch op {
		case prefixMisc:
			k = miscImm(sub)
		case prefixSIMD:
			k = simdImm(sub)
		default:
			k = atomicImm(sub)
		}
	}
	if k == immBad {
		if op >= prefixMisc {
			return in, fmt.Errorf("offset %d: %w %#x %d", in.start, errUnknownOpcode, op, in.sub)
		}
		return in, fmt.Errorf("offset %d: %w %#x", in.start, errUnknownOpcode, op)
	}
	if err := r.skipImm(k); err != nil {
		return in, fmt.Errorf("offset %d: opcode %#x: %w", in.start, op, err)
	}
	in.end = r.off
	return in, nil
}

// skipImm moves past immediates of shape k.
func (r *reader) skipImm(k imm) error {
	switch k {
	case immNone:
		return nil
	case immBlock:
		// The empty type (0x40), a value type (one byte, 0x6f-0x7f), or a type
		// index as a positive signed LEB128.
		if r.off >= len(r.b) {
			return errTruncated
		}
		if c := r.b[r.off]; c == 0x40 || (c >= 0x6f && c <= 0x7f) {
			r.off++
			return nil
		}
		return r.skipLEB(5)
	case immIdx:
		_, err := r.u32()
		return err
	case immIdx2:
		if _, err := r.u32(); err != nil {
			return err
		}
		_, err := r.u32()
		return err
	case immBrTable:
		n, err := r.u32()
		if err != nil {
			return err
		}
		if int(n) > len(r.b)-r.off {
			return errTruncated
		}
		for i := uint32(0); i <= n; i++ {
			if _, err := r.u32(); err != nil {
				return err
			}
		}
		return nil
	case immMemarg, immMemargLane:
		align, err := r.u32()
		if err != nil {
			return err
		}
		if align&0x40 != 0 {
			return errors.New("multiple memories are not supported")
		}
		if _, err := r.u32(); err != nil {
			return err
		}
		if k == immMemargLane {
			return r.skip(1)
		}
		return nil
	case immS32:
		return r.skipLEB(5)
	case immS64:
		return r.skipLEB(10)
	case immBytes4:
		return r.skip(4)
	case immBytes8:
		return r.skip(8)
	case immBytes16:
		return r.skip(16)
	case immLane, immRefType, immFenceByte:
		return r.skip(1)
	case immSelectT:
		n, err := r.u32()
		if err != nil {
			return err
		}
		return r.skip(int(n))
	}
	return fmt.Errorf("immediate shape %d", k)
}

func (r *reader) skip(n int) error {
	if n < 0 || n > len(r.b)-r.off {
		return errTruncated
	}
	r.off += n
	return nil
}

// skipLEB moves past a LEB128 value of at most max bytes.
func (r *reader) skipLEB(max int) error {
	for i := 0; i < max; i++ {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errors.New("LEB128 value too long")
}
