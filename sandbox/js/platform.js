// The web platform: the WinterCG globals a handler author expects (URL, TextEncoder,
// atob, structuredClone, crypto, timers, Intl, ...). Nothing of it runs in a runtime
// whose script uses none of it: the globals it defines are built on first use by the
// engine (goja.LazyGlobals, see platform.go), and the first of them runs this file,
// which returns the makers of each global, the locale methods of Number and Date, and
// the fixed-zone Date of deterministic mode.
// `native()` returns the Go half (platform*.go), built on its first call.
// `lim` carries the memory budget and its element and character bounds, and whether
// Date's local time is a fixed zone. The built-ins used here are read when this file
// first runs, which may be after the script changed them: that can only break the
// script's own invocation, as the Go half checks everything it is given.
(function (native0, lim) {
  'use strict';
  const G = globalThis;
  const O = Object, R = Reflect;
  const defineProperty = O.defineProperty, keys = O.keys, freeze = O.freeze;
  const apply = R.apply, ownKeys = R.ownKeys;
  const StringC = String, ErrorC = Error, TypeErrorC = TypeError, RangeErrorC = RangeError;

  const maxElems = lim.maxElems;
  const maxChars = lim.maxChars;

  function refuse(what, n) {
    lim.abort('memory', what + ' of ' + n + ' exceeds the memory budget of ' + lim.memoryBytes + ' bytes');
    throw new ErrorC('memory limit');
  }

  let nat;
  function native() {
    if (nat === undefined) nat = native0(dom(), TypeErrorC, RangeErrorC);
    return nat;
  }

  const makers = {};
  function lazy(name, make) {
    makers[name] = make;
  }
  function once(make) {
    let v, done = false;
    return () => {
      if (!done) { v = make(); done = true; }
      return v;
    };
  }
  // Intrinsics the platform relies on, read on first use (reading them touches goja's
  // lazily built prototypes, which a phase that uses no web API should not pay for).
  let ArrayBufferC, Uint8ArrayC, DataViewC, isView, MapC, SetC, WeakMapC, DateC, RegExpC, PromiseC, isArray, getProto, then, typedArrayProto, taBuffer, taByteOffset, taByteLength, taLength, taTag, abByteLength, abSlice, dvBuffer, dvByteOffset, dvByteLength, mapEntries, mapSet, mapGet, mapHas, setValues, setAdd, dateGetTime, wmGet, wmSet, wmHas, toStr;
  const caps = once(() => {
    ArrayBufferC = G.ArrayBuffer;
    Uint8ArrayC = G.Uint8Array;
    DataViewC = G.DataView;
    isView = ArrayBufferC.isView;
    MapC = Map;
    SetC = Set;
    WeakMapC = WeakMap;
    DateC = G.Date;
    RegExpC = RegExp;
    PromiseC = Promise;
    isArray = Array.isArray;
    getProto = O.getPrototypeOf;
    then = PromiseC.prototype.then;
    typedArrayProto = getProto(Uint8ArrayC.prototype);
    taBuffer = O.getOwnPropertyDescriptor(typedArrayProto, 'buffer').get;
    taByteOffset = O.getOwnPropertyDescriptor(typedArrayProto, 'byteOffset').get;
    taByteLength = O.getOwnPropertyDescriptor(typedArrayProto, 'byteLength').get;
    taLength = O.getOwnPropertyDescriptor(typedArrayProto, 'length').get;
    taTag = O.getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag).get;
    abByteLength = O.getOwnPropertyDescriptor(ArrayBufferC.prototype, 'byteLength').get;
    abSlice = ArrayBufferC.prototype.slice;
    dvBuffer = O.getOwnPropertyDescriptor(DataViewC.prototype, 'buffer').get;
    dvByteOffset = O.getOwnPropertyDescriptor(DataViewC.prototype, 'byteOffset').get;
    dvByteLength = O.getOwnPropertyDescriptor(DataViewC.prototype, 'byteLength').get;
    mapEntries = MapC.prototype.entries;
    mapSet = MapC.prototype.set;
    mapGet = MapC.prototype.get;
    mapHas = MapC.prototype.has;
    setValues = SetC.prototype.values;
    setAdd = SetC.prototype.add;
    dateGetTime = DateC.prototype.getTime;
    wmGet = WeakMapC.prototype.get;
    wmSet = WeakMapC.prototype.set;
    wmHas = WeakMapC.prototype.has;
    toStr = O.prototype.toString;
  });
  function method(obj, name, f) {
    defineProperty(obj, name, { value: f, writable: true, configurable: true, enumerable: false });
  }
  function getter(obj, name, f, set) {
    defineProperty(obj, name, { get: f, set, configurable: true, enumerable: true });
  }
  function tag(C, name) {
    defineProperty(C.prototype, Symbol.toStringTag, { value: name, configurable: true });
  }

  // ---- DOMException ----
  const dom = once(function () {
    const domCodes = {
      IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4, InvalidCharacterError: 5,
      NoModificationAllowedError: 7, NotFoundError: 8, NotSupportedError: 9, InvalidStateError: 11,
      SyntaxError: 12, InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
      TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20, URLMismatchError: 21,
      QuotaExceededError: 22, TimeoutError: 23, InvalidNodeTypeError: 24, DataCloneError: 25,
    };
    class DOMException extends ErrorC {
      constructor(message, name) {
        super(message === undefined ? '' : StringC(message));
        const n = name === undefined ? 'Error' : StringC(name);
        defineProperty(this, 'name', { value: n, writable: true, configurable: true, enumerable: false });
        defineProperty(this, 'code', { value: domCodes[n] || 0, writable: true, configurable: true, enumerable: false });
      }
    }
    tag(DOMException, 'DOMException');
    return DOMException;
  });
  lazy('DOMException', dom);
  function domErr(message, name) { const D = dom(); return new D(message, name); }

  // bytes returns a Uint8Array view of a BufferSource (ArrayBuffer, typed array,
  // DataView) without copying, or throws a TypeError naming what.
  function bytes(v, what) {
    caps();
    if (v instanceof ArrayBufferC) return new Uint8ArrayC(v);
    if (isView(v)) {
      if (taTagOf(v) !== undefined) return new Uint8ArrayC(apply(taBuffer, v, []), apply(taByteOffset, v, []), apply(taByteLength, v, []));
      return new Uint8ArrayC(apply(dvBuffer, v, []), apply(dvByteOffset, v, []), apply(dvByteLength, v, []));
    }
    throw new TypeErrorC(what + ': expected an ArrayBuffer, a typed array or a DataView');
  }
  function taTagOf(v) {
    try { return apply(taTag, v, []); } catch (e) { return undefined; }
  }
  function copyBytes(v, what) {
    const b = bytes(v, what);
    const c = new Uint8ArrayC(b.length);
    c.set(b);
    return c;
  }

  // ---- atob / btoa ----
  lazy('btoa', () => ({ btoa(data) {
    if (arguments.length < 1) throw new TypeErrorC("btoa: 1 argument required, but only 0 present");
    const s = StringC(data);
    if (s.length > maxChars) refuse('btoa', s.length);
    return native().btoa(s);
  } }).btoa);
  lazy('atob', () => ({ atob(data) {
    if (arguments.length < 1) throw new TypeErrorC("atob: 1 argument required, but only 0 present");
    const s = StringC(data);
    if (s.length > maxChars) refuse('atob', s.length);
    return native().atob(s);
  } }).atob);

  // ---- TextEncoder / TextDecoder ----
  const text = once(function () {
    caps();
    class TextEncoder {
      get encoding() { return 'utf-8'; }
      encode(input) {
        const s = input === undefined ? '' : StringC(input);
        if (s.length * 3 > lim.memoryBytes) refuse('TextEncoder.encode', s.length * 3);
        return new Uint8ArrayC(native().utf8Encode(s));
      }
      encodeInto(source, destination) {
        if (!(destination instanceof Uint8ArrayC)) throw new TypeErrorC('TextEncoder.encodeInto: the destination must be a Uint8Array');
        const r = native().encodeInto(StringC(source), destination);
        return { read: r[0], written: r[1] };
      }
    }
    tag(TextEncoder, 'TextEncoder');

    const decoders = new WeakMapC();
    class TextDecoder {
      constructor(label, options) {
        const l = label === undefined ? 'utf-8' : StringC(label);
        const o = options == null ? {} : options;
        const fatal = !!o.fatal, ignoreBOM = !!o.ignoreBOM;
        const d = native().newDecoder(l, fatal, ignoreBOM);
        apply(wmSet, decoders, [this, { encoding: d[0], decode: d[1], fatal, ignoreBOM }]);
      }
      get encoding() { return slot(decoders, this, 'TextDecoder').encoding; }
      get fatal() { return slot(decoders, this, 'TextDecoder').fatal; }
      get ignoreBOM() { return slot(decoders, this, 'TextDecoder').ignoreBOM; }
      decode(input, options) {
        const d = slot(decoders, this, 'TextDecoder');
        const stream = options != null && !!options.stream;
        const b = input === undefined ? new Uint8ArrayC(0) : bytes(input, 'TextDecoder.decode');
        if (b.length > maxChars) refuse('TextDecoder.decode', b.length);
        return d.decode(b, stream);
      }
    }
    tag(TextDecoder, 'TextDecoder');
    return { TextEncoder, TextDecoder };
  });
  lazy('TextEncoder', () => text().TextEncoder);
  lazy('TextDecoder', () => text().TextDecoder);

  function slot(map, self, what) {
    const s = apply(wmGet, map, [self]);
    if (s === undefined) throw new TypeErrorC('Illegal invocation: not a ' + what);
    return s;
  }

  // ---- URL / URLSearchParams ----
  // A URL's state is the record the Go parser returns:
  // [href, origin, protocol, username, password, host, hostname, port, pathname, search, hash].
  const web = once(function () {
    caps();
    const urls = new WeakMapC(), params = new WeakMapC();
    const fields = ['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash'];
    function parseURL(url, base) {
      return native().urlParse(StringC(url), base === undefined ? undefined : StringC(base));
    }
    class URL {
      constructor(url, base) {
        if (arguments.length < 1) throw new TypeErrorC('URL: 1 argument required, but only 0 present');
        const r = parseURL(url, base);
        if (typeof r === 'string') throw new TypeErrorC(r);
        apply(wmSet, urls, [this, { r, sp: null }]);
      }
      static canParse(url, base) { return typeof parseURL(url, base) !== 'string'; }
      static parse(url, base) {
        const r = parseURL(url, base);
        if (typeof r === 'string') return null;
        const u = O.create(URL.prototype);
        apply(wmSet, urls, [u, { r, sp: null }]);
        return u;
      }
      toString() { return slot(urls, this, 'URL').r[0]; }
      toJSON() { return slot(urls, this, 'URL').r[0]; }
      get searchParams() {
        const s = slot(urls, this, 'URL');
        if (s.sp === null) {
          s.sp = new URLSearchParams(s.r[9]);
          apply(wmGet, params, [s.sp]).url = this;
        }
        return s.sp;
      }
    }
    fields.forEach((f, i) => {
      const set = f === 'origin' ? undefined : function (v) {
        const s = slot(urls, this, 'URL');
        const r = native().urlSet(s.r[0], f, StringC(v));
        if (typeof r === 'string') throw new TypeErrorC(r);
        s.r = r;
        if ((f === 'href' || f === 'search') && s.sp !== null) apply(wmGet, params, [s.sp]).list = native().formParse(r[9].slice(1));
      };
      getter(URL.prototype, f, function () { return slot(urls, this, 'URL').r[i]; }, set);
    });
    tag(URL, 'URL');

    // A URLSearchParams keeps its pairs as a flat list [name0, value0, name1, ...].
    class URLSearchParams {
      constructor(init) {
        let list = [];
        if (init == null) {
          // empty
        } else if (typeof init === 'object' || typeof init === 'function') {
          const it = init[Symbol.iterator];
          if (it !== undefined) {
            if (typeof it !== 'function') throw new TypeErrorC('URLSearchParams: the init object is not iterable');
            for (const pair of init) {
              if (pair == null || typeof pair !== 'object' && typeof pair !== 'function') throw new TypeErrorC('URLSearchParams: each pair must be a sequence of two strings');
              const p = Array.from(pair);
              if (p.length !== 2) throw new TypeErrorC('URLSearchParams: each pair must have exactly two elements, got ' + p.length);
              list.push(native().usv(p[0]), native().usv(p[1]));
            }
          } else {
            for (const k of ownKeys(init)) {
              if (typeof k !== 'string') continue;
              const d = O.getOwnPropertyDescriptor(init, k);
              if (d === undefined || !d.enumerable) continue;
              list.push(native().usv(k), native().usv(init[k]));
            }
          }
        } else {
          let s = StringC(init);
          if (s.charCodeAt(0) === 63) s = s.slice(1);
          list = native().formParse(s);
        }
        apply(wmSet, params, [this, { list, url: null }]);
      }
      get size() { return slot(params, this, 'URLSearchParams').list.length / 2; }
      append(name, value) {
        const s = slot(params, this, 'URLSearchParams');
        s.list.push(native().usv(name), native().usv(value));
        update(s);
      }
      delete(name, value) {
        const s = slot(params, this, 'URLSearchParams');
        const n = native().usv(name), v = value === undefined ? undefined : native().usv(value);
        const out = [];
        for (let i = 0; i < s.list.length; i += 2) {
          if (s.list[i] === n && (v === undefined || s.list[i + 1] === v)) continue;
          out.push(s.list[i], s.list[i + 1]);
        }
        s.list = out;
        update(s);
      }
      get(name) {
        const s = slot(params, this, 'URLSearchParams'), n = native().usv(name);
        for (let i = 0; i < s.list.length; i += 2) if (s.list[i] === n) return s.list[i + 1];
        return null;
      }
      getAll(name) {
        const s = slot(params, this, 'URLSearchParams'), n = native().usv(name), out = [];
        for (let i = 0; i < s.list.length; i += 2) if (s.list[i] === n) out.push(s.list[i + 1]);
        return out;
      }
      has(name, value) {
        const s = slot(params, this, 'URLSearchParams');
        const n = native().usv(name), v = value === undefined ? undefined : native().usv(value);
        for (let i = 0; i < s.list.length; i += 2) if (s.list[i] === n && (v === undefined || s.list[i + 1] === v)) return true;
        return false;
      }
      set(name, value) {
        const s = slot(params, this, 'URLSearchParams');
        const n = native().usv(name), v = native().usv(value), out = [];
        let done = false;
        for (let i = 0; i < s.list.length; i += 2) {
          if (s.list[i] !== n) out.push(s.list[i], s.list[i + 1]);
          else if (!done) { out.push(n, v); done = true; }
        }
        if (!done) out.push(n, v);
        s.list = out;
        update(s);
      }
      sort() {
        const s = slot(params, this, 'URLSearchParams');
        const pairs = [];
        for (let i = 0; i < s.list.length; i += 2) pairs.push([s.list[i], s.list[i + 1], i]);
        // Stable, by UTF-16 code units, as the standard says.
        pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[2] - b[2]));
        s.list = [];
        for (const p of pairs) s.list.push(p[0], p[1]);
        update(s);
      }
      forEach(callback, thisArg) {
        if (typeof callback !== 'function') throw new TypeErrorC('URLSearchParams.forEach: the callback is not a function');
        const s = slot(params, this, 'URLSearchParams');
        for (let i = 0; i < s.list.length; i += 2) apply(callback, thisArg, [s.list[i + 1], s.list[i], this]);
      }
      *entries() { const s = slot(params, this, 'URLSearchParams'); for (let i = 0; i < s.list.length; i += 2) yield [s.list[i], s.list[i + 1]]; }
      *keys() { const s = slot(params, this, 'URLSearchParams'); for (let i = 0; i < s.list.length; i += 2) yield s.list[i]; }
      *values() { const s = slot(params, this, 'URLSearchParams'); for (let i = 0; i < s.list.length; i += 2) yield s.list[i + 1]; }
      toString() { return native().formSerialize(slot(params, this, 'URLSearchParams').list); }
    }
    method(URLSearchParams.prototype, Symbol.iterator, URLSearchParams.prototype.entries);
    tag(URLSearchParams, 'URLSearchParams');
    function update(s) {
      if (s.url === null) return;
      const u = apply(wmGet, urls, [s.url]);
      u.r = native().urlSet(u.r[0], 'query', native().formSerialize(s.list));
    }
    return { URL, URLSearchParams };
  });
  lazy('URL', () => web().URL);
  lazy('URLSearchParams', () => web().URLSearchParams);

  // ---- structuredClone ----
  // The clone walks the value with an explicit stack (no recursion), counts what it
  // creates against the memory budget and refuses nesting deeper than maxDepth, the
  // depth JSON.parse is held to: deeper values would overflow goja's recursive
  // JSON.stringify when the result is returned.
  const maxDepth = 10000;
  const errorCtors = () => ({ Error: ErrorC, EvalError, RangeError: RangeErrorC, ReferenceError, SyntaxError, TypeError: TypeErrorC, URIError });
  function cloneError(what) { return domErr('structuredClone: ' + what + ' could not be cloned', 'DataCloneError'); }
  function structuredClone(value, options) {
    caps();
    if (options != null && options.transfer !== undefined && Array.from(options.transfer).length > 0) {
      throw domErr('structuredClone: transferring objects is not supported', 'DataCloneError');
    }
    const memory = new MapC();
    const jobs = [];
    let count = 0, bytesCopied = 0;
    function clone(v, depth) {
      if (v === null) return v;
      const t = typeof v;
      if (t === 'symbol') throw cloneError('a Symbol');
      if (t === 'function') throw cloneError('a function (' + (v.name || 'anonymous') + ')');
      if (t !== 'object') return v;
      if (apply(mapHas, memory, [v])) return apply(mapGet, memory, [v]);
      if (depth > maxDepth) {
        lim.abort('stack', 'structuredClone of a value nested deeper than ' + maxDepth + ' levels');
        throw new ErrorC('stack limit');
      }
      if (++count > maxElems) refuse('structuredClone', 'more than ' + maxElems + ' values');
      const kind = apply(toStr, v, []);
      let out;
      switch (kind) {
        case '[object Boolean]': out = O(Boolean.prototype.valueOf.call(v)); break;
        case '[object Number]': out = O(Number.prototype.valueOf.call(v)); break;
        case '[object String]': out = O(StringC.prototype.valueOf.call(v)); break;
        case '[object BigInt]': out = O(BigInt.prototype.valueOf.call(v)); break;
        case '[object Date]': out = new DateC(apply(dateGetTime, v, [])); break;
        case '[object RegExp]': out = new RegExpC(v.source, v.flags); break;
        case '[object ArrayBuffer]': {
          const n = apply(abByteLength, v, []);
          bytesCopied += n;
          if (bytesCopied > lim.memoryBytes) refuse('structuredClone', bytesCopied + ' bytes');
          out = apply(abSlice, v, [0]);
          break;
        }
        case '[object DataView]': {
          const buf = clone(apply(dvBuffer, v, []), depth + 1);
          out = new DataViewC(buf, apply(dvByteOffset, v, []), apply(dvByteLength, v, []));
          break;
        }
        case '[object Map]': out = new MapC(); jobs.push(['map', v, out, depth]); break;
        case '[object Set]': out = new SetC(); jobs.push(['set', v, out, depth]); break;
        case '[object Error]': {
          const name = v.name;
          const C = typeof name === 'string' && errorCtors()[name] ? errorCtors()[name] : ErrorC;
          out = new C(v.message === undefined ? undefined : StringC(v.message));
          if (typeof v.stack === 'string') defineProperty(out, 'stack', { value: v.stack, writable: true, configurable: true, enumerable: false });
          if ('cause' in v) jobs.push(['cause', v, out, depth]);
          break;
        }
        case '[object Array]': {
          const n = v.length;
          if (n > maxElems) refuse('structuredClone of an array of length', n);
          out = new Array(n);
          jobs.push(['array', v, out, depth]);
          break;
        }
        case '[object Object]': out = {}; jobs.push(['props', v, out, depth]); break;
        default: {
          const tt = taTagOf(v);
          if (tt !== undefined) {
            const buf = clone(apply(taBuffer, v, []), depth + 1);
            out = new G[tt](buf, apply(taByteOffset, v, []), apply(taLength, v, []));
            break;
          }
          throw cloneError(kind.slice(8, -1) === 'Object' ? 'this object' : 'a ' + kind.slice(8, -1));
        }
      }
      apply(mapSet, memory, [v, out]);
      return out;
    }
    const result = clone(value, 0);
    while (jobs.length > 0) {
      const [kind, src, dst, depth] = jobs.pop();
      if (kind === 'array') {
        // By index: an array's keys() would allocate a string per element.
        for (let i = 0, n = src.length; i < n; i++) {
          if (++count > maxElems) refuse('structuredClone', 'more than ' + maxElems + ' values');
          if (i in src) dst[i] = clone(src[i], depth + 1);
        }
      } else if (kind === 'props') {
        for (const k of keys(src)) {
          if (++count > maxElems) refuse('structuredClone', 'more than ' + maxElems + ' values');
          dst[k] = clone(src[k], depth + 1);
        }
      } else if (kind === 'map') {
        const it = apply(mapEntries, src, []);
        for (let e = it.next(); !e.done; e = it.next()) apply(mapSet, dst, [clone(e.value[0], depth + 1), clone(e.value[1], depth + 1)]);
      } else if (kind === 'set') {
        const it = apply(setValues, src, []);
        for (let e = it.next(); !e.done; e = it.next()) apply(setAdd, dst, [clone(e.value, depth + 1)]);
      } else {
        defineProperty(dst, 'cause', { value: clone(src.cause, depth + 1), writable: true, configurable: true, enumerable: false });
      }
    }
    return result;
  }
  lazy('structuredClone', () => structuredClone);

  // ---- crypto ----
  const webCrypto = once(function () {
    caps();
    const keySlots = new WeakMapC();
    const hashes = { 'SHA-1': 'SHA-1', 'SHA-256': 'SHA-256', 'SHA-384': 'SHA-384', 'SHA-512': 'SHA-512' };
    function algName(a, what) {
      let n;
      if (typeof a === 'string') n = a;
      else if (a != null && typeof a === 'object' && a.name !== undefined) n = StringC(a.name);
      else throw new TypeErrorC(what + ': the algorithm must be a string or an object with a name');
      return n;
    }
    function hashName(a, what) {
      const n = algName(a, what).toUpperCase();
      const h = hashes[n];
      if (h === undefined) throw domErr(what + ': unrecognized hash algorithm ' + JSON.stringify(n) + ' (supported: SHA-1, SHA-256, SHA-384, SHA-512)', 'NotSupportedError');
      return h;
    }
    function hmacAlg(a, what) {
      const n = algName(a, what);
      if (n.toUpperCase() !== 'HMAC') throw domErr(what + ': unsupported algorithm ' + JSON.stringify(n) + ' (supported: HMAC)', 'NotSupportedError');
      return a;
    }
    class CryptoKey {
      constructor() { throw new TypeErrorC('Illegal constructor'); }
      get type() { return slot(keySlots, this, 'CryptoKey').type; }
      get extractable() { return slot(keySlots, this, 'CryptoKey').extractable; }
      get algorithm() { return slot(keySlots, this, 'CryptoKey').algorithm; }
      get usages() { return slot(keySlots, this, 'CryptoKey').usages.slice(); }
    }
    tag(CryptoKey, 'CryptoKey');
    function settle(f) {
      return new PromiseC((resolve, reject) => {
        try { resolve(f()); } catch (e) { reject(e); }
      });
    }
    function keyOf(key, usage, alg, what) {
      const k = key instanceof CryptoKey ? apply(wmGet, keySlots, [key]) : undefined;
      if (k === undefined) throw new TypeErrorC(what + ': the key is not a CryptoKey');
      hmacAlg(alg, what);
      if (k.usages.indexOf(usage) < 0) throw domErr(what + ': the key may not be used to ' + usage, 'InvalidAccessError');
      return k;
    }
    const subtle = {
      digest(algorithm, data) {
        return settle(() => {
          const h = hashName(algorithm, 'crypto.subtle.digest');
          return native().digest(h, copyBytes(data, 'crypto.subtle.digest'));
        });
      },
      importKey(format, keyData, algorithm, extractable, keyUsages) {
        return settle(() => {
          const what = 'crypto.subtle.importKey';
          hmacAlg(algorithm, what);
          if (algorithm.hash === undefined) throw new TypeErrorC(what + ': HMAC needs a hash (e.g. { name: "HMAC", hash: "SHA-256" })');
          const hash = hashName(algorithm.hash, what);
          const usages = Array.from(keyUsages || []);
          for (const u of usages) {
            if (u !== 'sign' && u !== 'verify') throw domErr(what + ': an HMAC key cannot be used to ' + u, 'SyntaxError');
          }
          if (usages.length === 0) throw domErr(what + ': an HMAC key needs at least one usage (sign, verify)', 'SyntaxError');
          let raw;
          if (format === 'raw') raw = copyBytes(keyData, what);
          else if (format === 'jwk') {
            if (keyData == null || keyData.kty !== 'oct' || typeof keyData.k !== 'string') throw domErr(what + ': a JWK HMAC key needs kty "oct" and k', 'DataError');
            raw = new Uint8ArrayC(native().base64url(keyData.k));
          } else throw domErr(what + ': unsupported key format ' + JSON.stringify(StringC(format)) + ' (supported: raw, jwk)', 'NotSupportedError');
          if (raw.length === 0) throw domErr(what + ': the HMAC key is empty', 'DataError');
          let length = raw.length * 8;
          if (algorithm.length !== undefined) {
            length = +algorithm.length;
            if (length > raw.length * 8 || length <= (raw.length - 1) * 8) throw domErr(what + ': length ' + length + ' does not match the key of ' + raw.length + ' bytes', 'DataError');
          }
          const key = O.create(CryptoKey.prototype);
          apply(wmSet, keySlots, [key, {
            type: 'secret', extractable: !!extractable, usages: freeze(usages),
            algorithm: freeze({ name: 'HMAC', hash: freeze({ name: hash }), length }), raw,
          }]);
          return key;
        });
      },
      exportKey(format, key) {
        return settle(() => {
          const what = 'crypto.subtle.exportKey';
          const k = key instanceof CryptoKey ? apply(wmGet, keySlots, [key]) : undefined;
          if (k === undefined) throw new TypeErrorC(what + ': the key is not a CryptoKey');
          if (!k.extractable) throw domErr(what + ': the key is not extractable', 'InvalidAccessError');
          if (format === 'raw') return native().copy(k.raw);
          if (format === 'jwk') {
            return { kty: 'oct', k: native().base64urlEncode(k.raw), alg: 'HS' + k.algorithm.hash.name.slice(4), key_ops: k.usages.slice(), ext: true };
          }
          throw domErr(what + ': unsupported key format ' + JSON.stringify(StringC(format)), 'NotSupportedError');
        });
      },
      sign(algorithm, key, data) {
        return settle(() => {
          const k = keyOf(key, 'sign', algorithm, 'crypto.subtle.sign');
          return native().hmac(k.algorithm.hash.name, k.raw, copyBytes(data, 'crypto.subtle.sign'));
        });
      },
      verify(algorithm, key, signature, data) {
        return settle(() => {
          const k = keyOf(key, 'verify', algorithm, 'crypto.subtle.verify');
          return native().hmacVerify(k.algorithm.hash.name, k.raw, copyBytes(signature, 'crypto.subtle.verify'), copyBytes(data, 'crypto.subtle.verify'));
        });
      },
    };
    const integerArrays = { Int8Array: 1, Uint8Array: 1, Uint8ClampedArray: 1, Int16Array: 1, Uint16Array: 1, Int32Array: 1, Uint32Array: 1, BigInt64Array: 1, BigUint64Array: 1 };
    const cryptoObj = {
      getRandomValues(array) {
        const t = isView(array) ? taTagOf(array) : undefined;
        if (t === undefined || !integerArrays[t]) throw domErr('crypto.getRandomValues: the argument must be an integer typed array', 'TypeMismatchError');
        const n = apply(taByteLength, array, []);
        if (n > 65536) throw domErr('crypto.getRandomValues: ' + n + ' bytes requested, more than the 65536 allowed in one call', 'QuotaExceededError');
        native().randomFill(bytes(array, 'crypto.getRandomValues'));
        return array;
      },
      randomUUID() { return native().randomUUID(); },
      subtle: freeze(subtle),
    };
    return { crypto: freeze(cryptoObj), CryptoKey };
  });
  lazy('crypto', () => webCrypto().crypto);
  lazy('CryptoKey', () => webCrypto().CryptoKey);

  // ---- timers, microtasks, performance ----
  function timer(name, repeat) {
    return { [name](handler, timeout, ...args) {
      if (typeof handler !== 'function') throw new TypeErrorC(name + ': the handler must be a function (strings of code are not run: dynamic code is disabled)');
      return native().timerAdd(handler, +timeout || 0, args, repeat);
    } }[name];
  }
  function clear(name) {
    return { [name](id) { if (id !== undefined) native().timerClear(+id || 0); } }[name];
  }
  lazy('setTimeout', () => timer('setTimeout', false));
  lazy('setInterval', () => timer('setInterval', true));
  lazy('clearTimeout', () => clear('clearTimeout'));
  lazy('clearInterval', () => clear('clearInterval'));
  lazy('queueMicrotask', () => { caps(); const resolved = PromiseC.resolve(); return ({ queueMicrotask(callback) {
    if (typeof callback !== 'function') throw new TypeErrorC('queueMicrotask: the callback must be a function');
    apply(then, resolved, [() => { try { callback(); } catch (e) { native().uncaught(e); } }]);
  } }).queueMicrotask; });
  lazy('performance', () => freeze({ now() { return native().now(); }, timeOrigin: native().timeOrigin() }));

  // ---- Intl and toLocaleString ----
  function localeList(locales) {
    if (locales === undefined) return [];
    if (typeof locales === 'string') return [locales];
    return Array.from(locales, (l) => StringC(l));
  }
  function options(o) { return o === undefined ? {} : O(o); }
  const intl = once(function () {
    caps();
    const formats = new WeakMapC();
    function NumberFormat(locales, opts) {
      if (!new.target) return new NumberFormat(locales, opts);
      const r = native().numberFormat(localeList(locales), options(opts));
      apply(wmSet, formats, [this, { format: r[0], resolved: r[1], bound: null }]);
    }
    defineProperty(NumberFormat.prototype, 'format', { configurable: true, get() {
      const s = slot(formats, this, 'Intl.NumberFormat');
      if (s.bound === null) s.bound = (n) => s.format(typeof n === 'bigint' ? StringC(n) : +n);
      return s.bound;
    } });
    method(NumberFormat.prototype, 'resolvedOptions', function resolvedOptions() { return O.assign({}, slot(formats, this, 'Intl.NumberFormat').resolved); });
    method(NumberFormat, 'supportedLocalesOf', function supportedLocalesOf(locales) { return native().supportedLocales(localeList(locales)); });
    function DateTimeFormat(locales, opts) {
      if (!new.target) return new DateTimeFormat(locales, opts);
      const r = native().dateFormat(localeList(locales), options(opts), 'any', 'date');
      apply(wmSet, formats, [this, { format: r[0], resolved: r[1], bound: null }]);
    }
    function timeOf(d) {
      const t = d === undefined ? DateC.now() : +(d instanceof DateC ? apply(dateGetTime, d, []) : d);
      if (t !== t) throw new RangeErrorC('Invalid time value');
      return t;
    }
    defineProperty(DateTimeFormat.prototype, 'format', { configurable: true, get() {
      const s = slot(formats, this, 'Intl.DateTimeFormat');
      if (s.bound === null) s.bound = (d) => s.format(timeOf(d));
      return s.bound;
    } });
    method(DateTimeFormat.prototype, 'resolvedOptions', function resolvedOptions() { return O.assign({}, slot(formats, this, 'Intl.DateTimeFormat').resolved); });
    method(DateTimeFormat, 'supportedLocalesOf', function supportedLocalesOf(locales) { return native().supportedLocales(localeList(locales)); });
    tag(NumberFormat, 'Intl.NumberFormat');
    tag(DateTimeFormat, 'Intl.DateTimeFormat');
    const intlObj = (() => {
      const intl = {};
      method(intl, 'NumberFormat', NumberFormat);
      method(intl, 'DateTimeFormat', DateTimeFormat);
      method(intl, 'getCanonicalLocales', function getCanonicalLocales(locales) { return native().canonicalLocales(localeList(locales)); });
      defineProperty(intl, Symbol.toStringTag, { value: 'Intl', configurable: true });
      return intl;
    })();
    return intlObj;
  });
  lazy('Intl', intl);
  // The locale methods of Number and Date; the Go side defines the methods and calls
  // these with the receiver.
  const numberValueOf = Number.prototype.valueOf;
  const locale = {
    number(self, locales, opts) {
      const n = apply(numberValueOf, self, []);
      return native().numberFormat(localeList(locales), options(opts))[0](n);
    },
  };
  function dateLocale(name, required, defaults) {
    locale[name] = function (self, locales, opts) {
      caps();
      const t = apply(dateGetTime, self, []);
      if (t !== t) return 'Invalid Date';
      return native().dateFormat(localeList(locales), options(opts), required, defaults)[0](t);
    };
  }
  dateLocale('toLocaleString', 'any', 'all');
  dateLocale('toLocaleDateString', 'date', 'date');
  dateLocale('toLocaleTimeString', 'time', 'time');

  // In deterministic mode Date's local time is a fixed zone (see zone.js); a
  // date-time string without a zone is read in that zone too, never the process's.
  function zone() {
    const D = G.Date, parse = D.parse;
    const wall = (t) => t - native().processOffset(t) * 60000;
    const zoned = (s) => {
      const t = parse(s);
      if (t !== t || !native().isLocalDateString(s)) return t;
      return native().fromWall(wall(t));
    };
    const P = new Proxy(D, {
      construct(target, args, newTarget) {
        if (args.length === 1 && typeof args[0] === 'string') return R.construct(target, [zoned(args[0])], newTarget === P ? target : newTarget);
        return R.construct(target, args, newTarget === P ? target : newTarget);
      },
      get(target, key, receiver) {
        if (key === Symbol.hasInstance) return (x) => x instanceof target;
        if (key === 'parse') return zonedParse;
        return R.get(target, key, receiver);
      },
    });
    const zonedParse = { parse(s) { return zoned(StringC(s)); } }.parse;
    defineProperty(D.prototype, 'constructor', { value: P, writable: true, configurable: true, enumerable: false });
    defineProperty(G, 'Date', { value: P, writable: true, configurable: true, enumerable: false });
  }

  return { makers, locale, zone };
})
