package wasm

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemory backs one instance's linear memory. It enforces the invocation's page
// cap, which may be lower than the runtime's. A refused growth is recorded by the
// code the engine routes every memory.grow through (see instrument), which also sees
// the growths wazero refuses itself.
type linearMemory struct {
	buf   []byte
	limit uint64 // bytes
	// mapped is the memory's own mapping outside the Go heap, where the instance's
	// memory is reset by its written pages (see instance.reset): buf lies in it until
	// a growth past it moves buf to the Go heap. It is unmapped by release, never by
	// Free: wazero frees a memory when it closes a module on a timeout, while the
	// guest's code may still be reading it.
	mapped *mapping
}

// mapping is a memory mapping unmapped once.
type mapping struct {
	b    []byte
	once sync.Once
}

func (mp *mapping) unmap() { mp.once.Do(func() { unmapMemory(mp.b) }) }

// maxPages is the most a 32-bit linear memory can hold: 4 GiB.
const maxPages = 1 << 16

// newLinearMemory returns the memory of one instance under capPages.
func newLinearMemory(capPages uint32) *linearMemory {
	return &linearMemory{limit: uint64(capPages) << 16}
}

// newMappedMemory is newLinearMemory whose buffer is mapped outside the Go heap
// (mapMemory), all it may grow to at once, when the system allows it.
func newMappedMemory(capPages uint32) *linearMemory {
	m := newLinearMemory(capPages)
	m.mapped = &mapping{}
	return m
}

var _ experimental.LinearMemory = (*linearMemory)(nil)

// allocator returns a MemoryAllocator whose single memory is m (the ABI allows one
// memory per module).
func (m *linearMemory) allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(capBytes, maxBytes uint64) experimental.LinearMemory {
		if capBytes > m.limit {
			capBytes = m.limit
		}
		// A mapping reserves the most the memory may grow to (address space, not
		// memory: pages are backed where written), so that it never moves.
		if reserve := min(maxBytes, m.limit); m.mapped != nil && reserve > 0 {
			if b, err := mapMemory(int(reserve)); err == nil {
				m.mapped.b = b
				// A memory nobody reaches is unmapped with it, should an instance be
				// dropped without release.
				runtime.AddCleanup(m, (*mapping).unmap, m.mapped)
				m.buf = b[:0]
				return m
			}
		}
		m.mapped = nil
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

// Free drops the buffer; its mapping, if any, stays until release.
func (m *linearMemory) Free() { m.buf = nil }

// release unmaps the memory's mapping. The instance must no longer run.
func (m *linearMemory) release() {
	if m.mapped != nil {
		m.mapped.unmap()
	}
}

// inMapping reports whether b, the instance's memory, lies in the memory's own mapping.
func (m *linearMemory) inMapping(b []byte) bool {
	if m.mapped == nil || len(m.mapped.b) == 0 || len(b) == 0 {
		return false
	}
	return unsafe.SliceData(b) == unsafe.SliceData(m.mapped.b) && len(b) <= len(m.mapped.b)
}
