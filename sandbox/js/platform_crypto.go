package js

import (
	"crypto/hmac"
	cryptorand "crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"

	"github.com/dop251/goja"
)

// crypto: random values and UUIDs from crypto/rand, or, in deterministic mode, from a
// ChaCha8 generator seeded with the invocation's seed; digests and HMAC from Go's
// crypto packages. platform.js validates the Web Crypto arguments and keeps the keys.

// hashes maps Web Crypto hash names to Go constructors.
var hashes = map[string]func() hash.Hash{
	"SHA-1":   sha1.New,
	"SHA-256": sha256.New,
	"SHA-384": sha512.New384,
	"SHA-512": sha512.New,
}

func (p *platform) installCrypto(set func(string, any)) {
	set("randomFill", func(v goja.Value) { p.random(p.bytesOf(v)) })
	set("randomUUID", func() string {
		var u [16]byte
		p.random(u[:])
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // variant 10
		return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
	})
	set("digest", func(name string, data goja.Value) goja.Value {
		h := p.hash(name)
		h.Write(p.bytesOf(data))
		return p.buffer(h.Sum(nil))
	})
	set("hmac", func(name string, key, data goja.Value) goja.Value {
		m := hmac.New(p.hashFunc(name), p.bytesOf(key))
		m.Write(p.bytesOf(data))
		return p.buffer(m.Sum(nil))
	})
	set("hmacVerify", func(name string, key, sig, data goja.Value) bool {
		m := hmac.New(p.hashFunc(name), p.bytesOf(key))
		m.Write(p.bytesOf(data))
		return hmac.Equal(m.Sum(nil), p.bytesOf(sig))
	})
}

// random fills b from the invocation's source of randomness.
func (p *platform) random(b []byte) {
	if p.rng != nil {
		_, _ = p.rng.Read(b)
		return
	}
	_, _ = cryptorand.Read(b) // never fails on supported platforms
}

func (p *platform) hashFunc(name string) func() hash.Hash {
	f, ok := hashes[name]
	if !ok {
		p.throwDOM("NotSupportedError", "unrecognized hash algorithm %q", name)
	}
	return f
}

func (p *platform) hash(name string) hash.Hash { return p.hashFunc(name)() }
