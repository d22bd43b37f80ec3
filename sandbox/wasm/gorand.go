package wasm

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/tetratelabs/wazero/api"
)

// A Go guest's runtime seeds its random generator in _initialize from random_get: the
// global generator (runtime.globalRand) from 32 bytes, then the one per thread
// (runtime.m0.chacha8, a chacha8rand.State) from four of the global one's outputs.
// math/rand, map seeds and select draw from the per-thread one, so every instance
// restored from one snapshot would draw the same numbers. The engine finds that state
// in the snapshot and reseeds it for every invocation: it knows the 32 bytes the guest
// read, so it computes the global generator's outputs (math/rand/v2's ChaCha8 is the
// same generator) and looks for four consecutive ones, or a seed the state moved to
// after it drew a few hundred numbers, with plausible counters after it and, before
// it, the buffer of numbers that seed makes. Go builds for
// wasm carry no DWARF or data symbols to find it by name. If none turns up, the
// instance is not reused. No SDK export can do this: the runtime offers
// no way to reseed it.

// chacha8rand.State (Go 1.22 and later): buf [32]uint64; seed [4]uint64; i, n, c uint32.
const (
	goRandSeedOff = 32 * 8
	goRandIOff    = goRandSeedOff + 32
	goRandNOff    = goRandIOff + 4
	goRandCOff    = goRandNOff + 4
	goRandSize    = goRandCOff + 4
)

// goRandEpochs is how many reseeds of the per-thread state (one every 124 numbers
// drawn) the search allows for; goRandOffsets how many global outputs may precede
// its seed (the runtime draws 4 for its hash keys first).
const (
	goRandEpochs  = 32
	goRandOffsets = 16
)

// findGoRand returns the addresses of the runtime's per-thread generator states in
// image (one per M the runtime made), given the bytes the initialization read from
// random_get.
func findGoRand(image, random []byte) []uint32 {
	if len(random) < 32 {
		return nil
	}
	var seed [32]byte
	copy(seed[:], random)
	global := rand.NewChaCha8(seed)
	outputs := make([]uint64, goRandOffsets+4)
	for i := range outputs {
		outputs[i] = global.Uint64()
	}
	// Candidate seeds, by their first word.
	cands := map[uint64][][32]byte{}
	for k := 0; k < goRandOffsets; k++ {
		var s [32]byte
		for j := range 4 {
			binary.LittleEndian.PutUint64(s[j*8:], outputs[k+j])
		}
		for _, e := range epochSeeds(s) {
			w := binary.LittleEndian.Uint64(e[:8])
			cands[w] = append(cands[w], e)
		}
	}
	var found []uint32
	for off := goRandSeedOff; off+goRandSize-goRandSeedOff <= len(image); off += 8 {
		list, ok := cands[binary.LittleEndian.Uint64(image[off:])]
		if !ok {
			continue
		}
		for _, s := range list {
			if [32]byte(image[off:off+32]) != s {
				continue
			}
			base := off - goRandSeedOff
			i := binary.LittleEndian.Uint32(image[base+goRandIOff:])
			nn := binary.LittleEndian.Uint32(image[base+goRandNOff:])
			c := binary.LittleEndian.Uint32(image[base+goRandCOff:])
			if (nn == 32 || nn == 28) && i <= nn && c%4 == 0 && c < 16 && bufMatches(image[base:], s, c, nn) {
				found = append(found, uint32(base))
			}
		}
	}
	return found
}

// bufMatches reports whether state's buffer holds the n numbers a generator seeded
// with seed makes in its block at counter c: what a real state holds, and a stray copy
// of the seed does not.
func bufMatches(state []byte, seed [32]byte, c, n uint32) bool {
	g := rand.NewChaCha8(seed)
	for range 32 * (c / 4) {
		g.Uint64()
	}
	for j := range min(n, 28) {
		if binary.LittleEndian.Uint64(state[j*8:]) != g.Uint64() {
			return false
		}
	}
	return true
}

// epochSeeds returns seed and the seeds a chacha8rand.State seeded with it moves to
// as it draws numbers (ChaCha8's binary form ends with the current seed).
func epochSeeds(seed [32]byte) [][32]byte {
	out := [][32]byte{seed}
	g := rand.NewChaCha8(seed)
	for range goRandEpochs {
		for range 124 {
			g.Uint64()
		}
		g.Uint64() // the draw that reseeds
		b, err := g.MarshalBinary()
		if err != nil || len(b) < 32 {
			break
		}
		out = append(out, [32]byte(b[len(b)-32:]))
	}
	return out
}

// reseedGoRand gives each generator state at addrs a new seed from r and empties its
// buffer, so that its next number comes from the new seed.
func reseedGoRand(mem api.Memory, addrs []uint32, r io.Reader) error {
	for _, addr := range addrs {
		if err := reseedOne(mem, addr, r); err != nil {
			return err
		}
	}
	return nil
}

func reseedOne(mem api.Memory, addr uint32, r io.Reader) error {
	b, ok := mem.Read(addr, goRandSize)
	if !ok {
		return fmt.Errorf("wasm: Go runtime generator state at %#x outside memory", addr)
	}
	if _, err := io.ReadFull(r, b[goRandSeedOff:goRandSeedOff+32]); err != nil {
		return fmt.Errorf("wasm: reseed the Go runtime generator: %w", err)
	}
	binary.LittleEndian.PutUint32(b[goRandIOff:], 32)
	binary.LittleEndian.PutUint32(b[goRandNOff:], 32)
	binary.LittleEndian.PutUint32(b[goRandCOff:], 0)
	return nil
}
