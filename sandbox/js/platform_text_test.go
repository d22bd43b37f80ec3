package js_test

import "testing"

// TestTextEncoding: the WHATWG Encoding Standard's UTF-8 encoder and decoder,
// including surrogates, invalid bytes (one U+FFFD per maximal subpart), the BOM,
// streaming, fatal mode and labels.
func TestTextEncoding(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"encode", `const e = new TextEncoder();
			return [e.encoding, Array.from(e.encode('aé€😀')), Array.from(e.encode('\uD800')), Array.from(e.encode('x\uDC00\uD83D')), e.encode().length, e.encode(undefined).length, Array.from(e.encode(12))]`,
			`["utf-8",[97,195,169,226,130,172,240,159,152,128],[239,191,189],[120,239,191,189,239,191,189],0,0,[49,50]]`},
		{"encodeInto", `const e = new TextEncoder(); const d = new Uint8Array(4);
			const r1 = e.encodeInto('aé😀', d); const d2 = new Uint8Array(8); const r2 = e.encodeInto('😀😀', d2);
			let err; try { e.encodeInto('x', [1]) } catch (x) { err = x.name }
			return [r1, Array.from(d), r2, err]`,
			`[{"read":2,"written":3},[97,195,169,0],{"read":4,"written":8},"TypeError"]`},
		{"decode", `const d = new TextDecoder();
			const b = (a) => new Uint8Array(a);
			return [d.encoding, d.fatal, d.ignoreBOM,
				d.decode(b([0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80])),
				d.decode(b([0xef, 0xbb, 0xbf, 0x61])),
				new TextDecoder('utf-8', { ignoreBOM: true }).decode(b([0xef, 0xbb, 0xbf, 0x61])),
				d.decode(b([0x61, 0xff, 0x62])),
				d.decode(b([0xf0, 0x9f, 0x98])),
				d.decode(b([0xf0, 0x9f, 0x98, 0x41])),
				d.decode(b([0xed, 0xa0, 0x80])),
				d.decode(b([0xc0, 0x80])),
				d.decode(b([0xe0, 0x80, 0x80])),
				d.decode(b([0xf4, 0x90, 0x80, 0x80])),
				d.decode(b([0x80, 0xbf])),
				d.decode(), d.decode(new ArrayBuffer(2)), d.decode(new DataView(b([0x68, 0x69]).buffer)),
				d.decode(new Uint16Array([0x6968])),
			]`,
			`["utf-8",false,false,"aé€😀","a","\ufeffa","a\ufffdb","\ufffd","\ufffdA","\ufffd\ufffd\ufffd","\ufffd\ufffd","\ufffd\ufffd\ufffd","\ufffd\ufffd\ufffd\ufffd","\ufffd\ufffd","","\u0000\u0000","hi","hi"]`},
		{"stream", `const d = new TextDecoder(); const out = [];
			out.push(d.decode(new Uint8Array([0xef, 0xbb]), { stream: true }));
			out.push(d.decode(new Uint8Array([0xbf, 0xf0, 0x9f]), { stream: true }));
			out.push(d.decode(new Uint8Array([0x98, 0x80, 0xe2]), { stream: true }));
			out.push(d.decode());
			out.push(d.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x62])));
			return out`, `["","","😀","\ufffd","b"]`},
		{"fatal", `const d = new TextDecoder('utf-8', { fatal: true }); const out = [d.fatal];
			for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80]]) {
				try { d.decode(new Uint8Array(bad)); out.push('decoded') } catch (e) { out.push(e.name) }
			}
			out.push(d.decode(new Uint8Array([0x6f, 0x6b])));
			return out`, `[true,"TypeError","TypeError","TypeError","ok"]`},
		{"labels", `const out = [];
			for (const l of ['utf8', ' UTF-8 ', 'unicode-1-1-utf-8', 'latin1', 'ascii', 'utf-16le', 'utf-16', 'utf-16be', 'shift_jis', 'iso-8859-2']) out.push(new TextDecoder(l).encoding);
			out.push(new TextDecoder('windows-1252').decode(new Uint8Array([0x80, 0xe9])));
			out.push(new TextDecoder('utf-16le').decode(new Uint8Array([0x61, 0x00, 0x3d, 0xd8, 0x00, 0xde])));
			out.push(new TextDecoder('utf-16be').decode(new Uint8Array([0x00, 0x61])));
			for (const l of ['nope', 'replacement', 'utf-7']) { try { new TextDecoder(l); out.push('made ' + l) } catch (e) { out.push(e.name) } }
			try { new TextDecoder().decode('string') } catch (e) { out.push(e.name) }
			return out`, `["utf-8","utf-8","utf-8","windows-1252","windows-1252","utf-16le","utf-16le","utf-16be","shift_jis","iso-8859-2","€é","a😀","a","RangeError","RangeError","RangeError","TypeError"]`},
	})
}

// TestBase64: atob and btoa as the HTML standard defines them (forgiving base64).
func TestBase64(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"btoa", `return [btoa(''), btoa('f'), btoa('fo'), btoa('foo'), btoa('foobar'), btoa('\u00ff\u00fe'), btoa(null), btoa(12)]`,
			`["","Zg==","Zm8=","Zm9v","Zm9vYmFy","//4=","bnVsbA==","MTI="]`},
		{"atob", `return [atob(''), atob('Zg=='), atob('Zg'), atob('Zm8='), atob('Zm9vYmFy'), atob(' Zm9v\nYmFy\t'), atob('//4=').charCodeAt(0), atob('YR=='), atob(undefined === 1 ? '' : 'YQ')]`,
			`["","f","f","fo","foobar","foobar",255,"a","a"]`},
		{"errors", `const out = [];
			for (const s of ['Zg=', 'Zg===', 'Z', 'Zm9v=', 'Zm!v', '=Zm9', 'Zm9v\u00ff']) {
				try { atob(s); out.push('decoded ' + s) } catch (e) { out.push(e.name + ' ' + e.code + ' ' + (e instanceof DOMException)) }
			}
			try { btoa('€') } catch (e) { out.push(e.name) }
			try { btoa('\uD83D\uDE00') } catch (e) { out.push(e.name) }
			try { atob() } catch (e) { out.push(e.name) }
			return out`, `["InvalidCharacterError 5 true","InvalidCharacterError 5 true","InvalidCharacterError 5 true","InvalidCharacterError 5 true","InvalidCharacterError 5 true","InvalidCharacterError 5 true","InvalidCharacterError 5 true","InvalidCharacterError","InvalidCharacterError","TypeError"]`},
	})
}

// TestStructuredClone: the HTML standard's structured clone of plain data, Date,
// RegExp, Map, Set, ArrayBuffer and views, errors and cycles; functions and symbols
// refused with a DataCloneError.
func TestStructuredClone(t *testing.T) {
	runCases(t, nil, []jsCase{
		{"plain data and cycles", `const a = { n: 1, s: 'x', b: true, z: null, u: undefined, arr: [1, , 3], nested: { deep: [{ x: 1 }] } };
			a.self = a; a.arr.push(a.nested);
			const c = structuredClone(a);
			return [c !== a, c.self === c, c.arr[3] === c.nested, c.nested !== a.nested, 1 in c.arr, 'u' in c, c.u === undefined, c.nested.deep[0].x, c.arr.length]`,
			`[true,true,true,true,false,true,true,1,4]`},
		{"built-in types", `const d = new Date(Date.UTC(2026, 0, 2)); const m = new Map([[d, 'date'], ['k', new Set([1, 'two'])]]);
			const c = structuredClone({ d, m, r: /a+b/gi, big: 10n, wrapped: [Object(1), Object('s'), Object(false)] });
			const [cd] = c.m.keys();
			return [c.d instanceof Date, c.d.getTime() === d.getTime(), c.d !== d, cd === c.d, c.m.get('k').has('two'), c.r.source, c.r.flags, c.r.lastIndex, typeof c.big, c.big === 10n, c.wrapped.map((w) => typeof w), c.wrapped.map((w) => w.valueOf())]`,
			`[true,true,true,true,true,"a+b","gi",0,"bigint",true,["object","object","object"],[1,"s",false]]`},
		{"buffers and views", `const buf = new ArrayBuffer(8); const u8 = new Uint8Array(buf); u8[0] = 7;
			const o = { a: u8, b: new Uint16Array(buf, 2, 2), v: new DataView(buf, 4), raw: buf };
			const c = structuredClone(o);
			u8[0] = 9;
			return [c.a[0], c.a.buffer === c.b.buffer, c.raw === c.a.buffer, c.b.byteOffset, c.b.length, c.v.byteOffset, c.a.buffer !== buf, c.b instanceof Uint16Array]`,
			`[7,true,true,2,2,4,true,true]`},
		{"errors", `const e = new TypeError('bad', { cause: 'why' });
			const c = structuredClone(e);
			class MyErr extends Error { constructor() { super('mine'); this.name = 'MyErr' } }
			const m = structuredClone(new MyErr());
			return [c instanceof TypeError, c.message, c.cause, c !== e, m instanceof Error, m.name, m.message]`,
			`[true,"bad","why",true,true,"Error","mine"]`},
		{"prototypes and getters", `class P { constructor() { this.x = 1 } get y() { return 2 } }
			const o = { get g() { return 'got' } }; Object.defineProperty(o, 'hidden', { value: 1, enumerable: false });
			const c = structuredClone(new P()); const c2 = structuredClone(o);
			return [Object.getPrototypeOf(c) === Object.prototype, c.x, c.y, c2.g, Object.getOwnPropertyDescriptor(c2, 'g').value, 'hidden' in c2, structuredClone(5), structuredClone('s'), structuredClone(null), structuredClone(undefined) === undefined]`,
			`[true,1,null,"got","got",false,5,"s",null,true]`},
		{"refused", `const out = [];
			for (const v of [() => 1, { f() {} }, Symbol('s'), [Symbol.iterator], new WeakMap(), Promise.resolve(), { p: new Proxy(function () {}, {}) }]) {
				try { structuredClone(v); out.push('cloned') } catch (e) { out.push([e.name, e.code, e instanceof DOMException]) }
			}
			try { structuredClone({}, { transfer: [new ArrayBuffer(1)] }) } catch (e) { out.push(e.name) }
			return out`,
			`[["DataCloneError",25,true],["DataCloneError",25,true],["DataCloneError",25,true],["DataCloneError",25,true],["DataCloneError",25,true],["DataCloneError",25,true],["DataCloneError",25,true],"DataCloneError"]`},
	})
}
