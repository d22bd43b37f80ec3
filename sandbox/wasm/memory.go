package wasm

import "github.com/tetratelabs/wazero/experimental"

// linearMemory backs one instance's linear memory. It enforces the invocation's page
// cap, which may be lower than the runtime's. A refused growth is recorded by the
// code the engine routes every memory.grow through (see instrument), which also sees
// the growths wazero refuses itself.
type linearMemory struct {
	buf   []byte
	limit uint64 // bytes
}

// maxPages is the most a 32-bit linear memory can hold: 4 GiB.
const maxPages = 1 << 16

// newLinearMemory returns the memory of one instance under capPages.
func newLinearMemory(capPages uint32) *linearMemory {
	return &linearMemory{limit: uint64(capPages) << 16}
}

var _ experimental.LinearMemory = (*linearMemory)(nil)

// allocator returns a MemoryAllocator whose single memory is m (the ABI allows one
// memory per module).
func (m *linearMemory) allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capBytes, _ uint64) experimental.LinearMemory {
		if capBytes > m.limit {
			capBytes = m.limit
		}
		m.buf = make([]byte, 0, capBytes)
		return m
	})
}

// Reallocate grows the memory to size bytes, or returns nil (memory.grow yields -1)
// when size is above the cap.
func (m *linearMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		// Bytes past the old length were never handed out, so they are still zero.
		m.buf = m.buf[:size]
		return m.buf
	}
	newCap := 2 * uint64(cap(m.buf))
	if newCap < size {
		newCap = size
	}
	if newCap > m.limit {
		newCap = m.limit
	}
	buf := make([]byte, size, newCap)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

// Free drops the buffer.
func (m *linearMemory) Free() { m.buf = nil }
