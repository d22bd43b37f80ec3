package js_test

import (
	"testing"

	"github.com/scripthost/scripthost/sandbox"
)

const hexJS = `const hex = (b) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');
const enc = (s) => new TextEncoder().encode(s);
const rep = (n, v) => new Uint8Array(n).fill(v);
`

// TestCryptoDigest: the SHA vectors of FIPS 180 (via its examples: "abc", the empty
// message, the two-block message).
func TestCryptoDigest(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"FIPS 180 vectors", hexJS + `const out = [];
			for (const alg of ['SHA-1', 'SHA-256', 'SHA-384', 'SHA-512']) out.push(hex(await crypto.subtle.digest(alg, enc('abc'))));
			out.push(hex(await crypto.subtle.digest({ name: 'sha-256' }, new ArrayBuffer(0))));
			out.push(hex(await crypto.subtle.digest('SHA-256', enc('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))));
			out.push(hex(await crypto.subtle.digest('SHA-1', enc('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))));
			return out`, `[
			"a9993e364706816aba3e25717850c26c9cd0d89d",
			"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
			"cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
			"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
			"84983e441c3bd26ebaae4aa1f95129e5e54670f1"]`},
		{"errors reject", `const out = [];
			for (const [alg, data] of [['MD5', new Uint8Array(1)], ['SHA-256', 'a string'], [42, new Uint8Array(1)]]) {
				const p = crypto.subtle.digest(alg, data);
				out.push(p instanceof Promise);
				try { await p; out.push('digested') } catch (e) { out.push(e.name) }
			}
			return out`, `[true,"NotSupportedError",true,"TypeError",true,"TypeError"]`},
	})
}

// TestCryptoHMAC: RFC 4231's HMAC-SHA-256/384/512 test cases 1, 2, 3, 4, 6 and 7,
// plus verify, usages and key formats.
func TestCryptoHMAC(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"RFC 4231", hexJS + `
			const cases = [
				[rep(20, 0x0b), enc('Hi There')],
				[enc('Jefe'), enc('what do ya want for nothing?')],
				[rep(20, 0xaa), rep(50, 0xdd)],
				[Uint8Array.from({ length: 25 }, (_, i) => i + 1), rep(50, 0xcd)],
				[rep(131, 0xaa), enc('Test Using Larger Than Block-Size Key - Hash Key First')],
				[rep(131, 0xaa), enc('This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.')],
			];
			const out = {};
			for (const hash of ['SHA-256', 'SHA-384', 'SHA-512']) {
				out[hash] = [];
				for (const [k, d] of cases) {
					const key = await crypto.subtle.importKey('raw', k, { name: 'HMAC', hash }, false, ['sign']);
					out[hash].push(hex(await crypto.subtle.sign('HMAC', key, d)));
				}
			}
			return out`, `{
			"SHA-256": ["b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
				"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
				"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
				"82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
				"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
				"9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"],
			"SHA-384": ["afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6",
				"af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649",
				"88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b2a5ab39dc13814b94e3ab6e101a34f27",
				"3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e6801dd23c4a7d679ccf8a386c674cffb",
				"4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952",
				"6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5a678cc31e799176d3860e6110c46523e"],
			"SHA-512": ["87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854",
				"164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
				"fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb",
				"b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3dba91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd",
				"80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598",
				"e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58"]}`},
		{"verify and a webhook signature", hexJS + `
			const key = await crypto.subtle.importKey('raw', enc('whsec_test'), { name: 'HMAC', hash: { name: 'SHA-256' } }, true, ['sign', 'verify']);
			const body = enc('{"id":"evt_1"}');
			const sig = await crypto.subtle.sign({ name: 'HMAC' }, key, body);
			const bad = new Uint8Array(sig.slice(0)); bad[0] ^= 1;
			return [await crypto.subtle.verify('HMAC', key, sig, body), await crypto.subtle.verify('HMAC', key, bad, body),
				await crypto.subtle.verify('HMAC', key, sig.slice(0, 16), body), await crypto.subtle.verify('HMAC', key, sig, enc('other')),
				key.type, key.extractable, key.algorithm, key.usages, hex(await crypto.subtle.exportKey('raw', key)),
				(await crypto.subtle.exportKey('jwk', key)).k, Object.prototype.toString.call(key)]`,
			`[true,false,false,false,"secret",true,{"name":"HMAC","hash":{"name":"SHA-256"},"length":80},["sign","verify"],"77687365635f74657374","d2hzZWNfdGVzdA","[object CryptoKey]"]`},
		{"jwk import", hexJS + `
			const key = await crypto.subtle.importKey('jwk', { kty: 'oct', k: 'SmVmZQ' }, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
			return hex(await crypto.subtle.sign('HMAC', key, enc('what do ya want for nothing?')))`,
			`"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"`},
		{"errors", hexJS + `const out = [];
			const attempt = async (f) => { try { await f(); out.push('ok') } catch (e) { out.push(e.name) } };
			const signOnly = await crypto.subtle.importKey('raw', enc('k'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
			await attempt(() => crypto.subtle.verify('HMAC', signOnly, new Uint8Array(32), enc('x')));
			await attempt(() => crypto.subtle.exportKey('raw', signOnly));
			await attempt(() => crypto.subtle.importKey('raw', enc('k'), { name: 'HMAC', hash: 'SHA-256' }, false, ['encrypt']));
			await attempt(() => crypto.subtle.importKey('raw', enc('k'), { name: 'HMAC', hash: 'SHA-256' }, false, []));
			await attempt(() => crypto.subtle.importKey('raw', new Uint8Array(0), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']));
			await attempt(() => crypto.subtle.importKey('raw', enc('k'), { name: 'AES-GCM' }, false, ['encrypt']));
			await attempt(() => crypto.subtle.importKey('raw', enc('k'), { name: 'HMAC', hash: 'MD5' }, false, ['sign']));
			await attempt(() => crypto.subtle.importKey('pkcs8', enc('k'), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']));
			await attempt(() => crypto.subtle.sign('HMAC', { fake: 'key' }, enc('x')));
			try { new CryptoKey() } catch (e) { out.push(e.name) }
			return out`, `["InvalidAccessError","InvalidAccessError","SyntaxError","SyntaxError","DataError","NotSupportedError","NotSupportedError","NotSupportedError","TypeError","TypeError"]`},
	})
}

// TestCryptoRandom: getRandomValues and randomUUID as the Web Crypto API defines them.
func TestCryptoRandom(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"getRandomValues", `const a = new Uint8Array(65536); const r = crypto.getRandomValues(a);
			const out = [r === a, a.some((x) => x !== 0)];
			for (const C of [Int8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array]) out.push(crypto.getRandomValues(new C(4)).length);
			const view = new Uint8Array(16); crypto.getRandomValues(view.subarray(8)); out.push(view.slice(0, 8).every((x) => x === 0));
			for (const bad of [new Float32Array(1), new Float64Array(1), [1, 2], new DataView(new ArrayBuffer(4)), new Uint8Array(65537), new Uint32Array(16385)]) {
				try { crypto.getRandomValues(bad); out.push('filled') } catch (e) { out.push(e.name + ' ' + e.code) }
			}
			return out`,
			`[true,true,4,4,4,4,4,4,4,4,true,"TypeMismatchError 17","TypeMismatchError 17","TypeMismatchError 17","TypeMismatchError 17","QuotaExceededError 22","QuotaExceededError 22"]`},
		{"randomUUID", `const re = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
			const ids = new Set(); for (let i = 0; i < 100; i++) { const u = crypto.randomUUID(); if (!re.test(u)) return u; ids.add(u) }
			return ids.size`, `100`},
	})
}

// TestDeterministicRandomness: in deterministic mode randomUUID and getRandomValues
// repeat for a seed and change with it.
func TestDeterministicRandomness(t *testing.T) {
	body := `return [crypto.randomUUID(), Array.from(crypto.getRandomValues(new Uint8Array(8))), crypto.randomUUID()]`
	run := func(seed int64) string {
		got, err := evalJS(t, body, &sandbox.Determinism{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b, c := run(1), run(1), run(2)
	if a != b {
		t.Errorf("seed 1 gave %s, then %s: want the same", a, b)
	}
	if a == c {
		t.Errorf("seeds 1 and 2 both gave %s: want different values", a)
	}
}
