// The prelude runs in every fresh runtime before the workflow module. It captures the
// built-ins the host relies on before a script can replace them, installs the guards on
// built-ins that allocate in one step, and returns the helpers the Go side calls.
// `host` holds Go functions: abort(kind, detail), elapsed() (milliseconds, monotonic),
// emit(level, text).
(function (host, lim) {
  'use strict';
  const G = globalThis;
  const O = Object, A = Array, R = Reflect;
  const freeze = O.freeze, isFrozen = O.isFrozen, names = O.getOwnPropertyNames;
  const defineProperty = O.defineProperty, keys = O.keys, isArray = A.isArray;
  const hasOwn = O.prototype.hasOwnProperty;
  const apply = R.apply, construct = R.construct;
  const parse = JSON.parse, stringify = JSON.stringify;
  const ProxyC = Proxy, ErrorC = Error, StringC = String;
  const abort = host.abort, elapsed = host.elapsed, emit = host.emit;

  // maxElems and maxChars bound what one built-in call may allocate: a Value is about
  // 16 bytes, a string character one or two.
  const maxElems = Math.floor(lim.memoryBytes / 16);
  const maxChars = Math.floor(lim.memoryBytes / 2);
  // JSON text is quoted character by character into a builder that doubles as it
  // grows, and goja does it slowly (tens of MB/s) without checking for interrupts: keep
  // it to an eighth of the string budget (4 M characters for the default 64 MiB).
  const maxJSON = Math.floor(maxChars / 8);

  function toLen(v) {
    const n = Math.trunc(+v);
    return n > 0 ? n : 0;
  }

  function refuse(what, n) {
    abort('memory', what + ' of ' + n + ' exceeds the memory budget of ' + lim.memoryBytes + ' bytes');
    throw new ErrorC('memory limit');
  }

  function guard(obj, name, check) {
    const orig = obj[name];
    if (typeof orig !== 'function') return;
    const wrapped = {
      [name](...args) {
        check(this, args);
        return apply(orig, this, args);
      },
    }[name];
    defineProperty(obj, name, { value: wrapped, writable: true, configurable: true, enumerable: false });
  }

  // goja's instanceof does not see through proxies of constructors: answer it for them.
  function proxyConstructor(C, handler) {
    handler.get = function (target, key, receiver) {
      if (key === Symbol.hasInstance) return (x) => x instanceof target;
      return R.get(target, key, receiver);
    };
    return new ProxyC(C, handler);
  }

  function rel(v, len, dflt) {
    if (v === undefined) return dflt;
    const n = Math.trunc(+v) || 0;
    return n < 0 ? Math.max(len + n, 0) : Math.min(n, len);
  }

  guard(A.prototype, 'fill', function (self, args) {
    const len = self == null ? 0 : toLen(self.length);
    const n = rel(args[2], len, len) - rel(args[1], len, 0);
    if (n > maxElems) refuse('Array.prototype.fill', n);
  });
  // Array methods loop over 0..length natively, holes included, without checking for
  // interrupts: an array (or array-like) longer than the element budget is refused
  // before the loop starts.
  function lengthGuard(name) {
    return function (self) {
      const len = self == null ? 0 : toLen(self.length);
      if (len > maxElems) refuse('Array.prototype.' + name + ' over a length', len);
    };
  }
  for (const name of ['at', 'copyWithin', 'every', 'filter', 'find', 'findIndex', 'findLast', 'findLastIndex',
    'forEach', 'includes', 'indexOf', 'lastIndexOf', 'map', 'reduce', 'reduceRight', 'reverse', 'shift',
    'slice', 'some', 'sort', 'splice', 'toLocaleString', 'unshift', 'toReversed', 'toSorted', 'toSpliced', 'with']) {
    guard(A.prototype, name, lengthGuard(name));
  }
  guard(A.prototype, 'join', function (self, args) {
    const len = self == null ? 0 : toLen(self.length);
    if (len > maxElems) refuse('Array.prototype.join over a length', len);
    const sep = args[0] === undefined ? 1 : StringC(args[0]).length;
    let n = len * sep;
    for (let i = 0; i < len && n <= maxChars; i++) {
      const x = self[i];
      n += typeof x === 'string' ? x.length : 8;
    }
    if (n > maxChars) refuse('Array.prototype.join', n);
  });
  guard(A.prototype, 'concat', function (self, args) {
    let n = self == null ? 0 : toLen(self.length);
    for (let i = 0; i < args.length; i++) n += isArray(args[i]) ? toLen(args[i].length) : 1;
    if (n > maxElems) refuse('Array.prototype.concat', n);
  });
  // flat copies shared subtrees once per reference: count what it would produce.
  function flatGuard(self, args) {
    const depth = args[0] === undefined ? 1 : +args[0];
    let n = 0;
    const count = (a, d) => {
      const len = toLen(a.length);
      if (len > maxElems) refuse('Array.prototype.flat over a length', len);
      for (let i = 0; i < len && n <= maxElems; i++) {
        const x = a[i];
        if (d > 0 && isArray(x)) count(x, d - 1);
        else n++;
      }
    };
    if (self != null) count(self, depth);
    if (n > maxElems) refuse('Array.prototype.flat', n);
  }
  guard(A.prototype, 'flat', flatGuard);
  // Spread and destructuring iterate natively: bound the length before they start.
  for (const name of ['values', 'keys', 'entries']) guard(A.prototype, name, lengthGuard(name));
  defineProperty(A.prototype, Symbol.iterator, { value: A.prototype.values, writable: true, configurable: true, enumerable: false });
  guard(A.prototype, 'flatMap', lengthGuard('flatMap'));
  guard(A, 'from', function (self, args) {
    const src = args[0];
    if (src != null && (typeof src === 'object' || typeof src === 'string')) {
      const n = toLen(src.length);
      if (n > maxElems) refuse('Array.from', n);
    }
  });
  const ArrayProxy = proxyConstructor(A, {
    construct(target, args, newTarget) {
      if (args.length === 1 && typeof args[0] === 'number' && args[0] > maxElems) refuse('Array', args[0]);
      return construct(target, args, newTarget === ArrayProxy ? target : newTarget);
    },
    apply(target, self, args) {
      if (args.length === 1 && typeof args[0] === 'number' && args[0] > maxElems) refuse('Array', args[0]);
      return apply(target, self, args);
    },
  });
  defineProperty(A.prototype, 'constructor', { value: ArrayProxy, writable: true, configurable: true, enumerable: false });
  defineProperty(G, 'Array', { value: ArrayProxy, writable: true, configurable: true, enumerable: false });
  guard(StringC.prototype, 'split', function (self, args) {
    const s = StringC(self);
    if (s.length > maxElems && args[0] === '') refuse('String.prototype.split', s.length);
  });
  guard(StringC.prototype, 'concat', function (self, args) {
    let n = StringC(self).length;
    for (let i = 0; i < args.length; i++) n += typeof args[i] === 'string' ? args[i].length : 8;
    if (n > maxChars) refuse('String.prototype.concat', n);
  });
  for (const name of ['replace', 'replaceAll']) {
    guard(StringC.prototype, name, function (self, args) {
      const pat = args[0], rep = args[1];
      if (typeof pat !== 'string' || typeof rep !== 'string' || rep.length <= pat.length) return;
      const s = StringC(self);
      let count = 0;
      if (name === 'replace') count = s.indexOf(pat) >= 0 ? 1 : 0;
      else for (let i = s.indexOf(pat); i >= 0 && count * rep.length <= maxChars; i = s.indexOf(pat, i + (pat.length || 1))) count++;
      if (s.length + count * (rep.length - pat.length) > maxChars) refuse('String.prototype.' + name, count * rep.length);
    });
  }
  guard(StringC.prototype, 'repeat', function (self, args) {
    const n = StringC(self).length * toLen(args[0]);
    if (n > maxChars) refuse('String.prototype.repeat', n);
  });
  for (const pad of ['padStart', 'padEnd']) {
    guard(StringC.prototype, pad, function (self, args) {
      const n = toLen(args[0]);
      if (n > maxChars) refuse('String.prototype.' + pad, n);
    });
  }
  function argsGuard(list) {
    if (list != null && typeof list === 'object') {
      const n = toLen(list.length);
      if (n > maxElems) refuse('argument list', n);
    }
  }
  guard(Function.prototype, 'apply', function (self, args) { argsGuard(args[1]); });
  guard(R, 'apply', function (self, args) { argsGuard(args[2]); });
  guard(R, 'construct', function (self, args) { argsGuard(args[1]); });

  // Buffers and typed arrays are constructed through proxies that check the size; the
  // prototypes' constructor properties point at the proxies so that
  // `new x.constructor(n)` takes the same path.
  const ArrayBufferC = ArrayBuffer;
  for (const name of ['ArrayBuffer', 'SharedArrayBuffer', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray',
    'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array',
    'BigInt64Array', 'BigUint64Array']) {
    const C = G[name];
    if (typeof C !== 'function') continue;
    const per = C.BYTES_PER_ELEMENT || 1;
    const P = proxyConstructor(C, {
      construct(target, args, newTarget) {
        const a = args[0];
        let n = 0;
        if (typeof a === 'number') n = toLen(a);
        else if (a != null && typeof a === 'object' && !(a instanceof ArrayBufferC)) n = toLen(a.length);
        if (n * per > lim.memoryBytes) refuse(name, n * per);
        return construct(target, args, newTarget === P ? target : newTarget);
      },
    });
    defineProperty(C.prototype, 'constructor', { value: P, writable: true, configurable: true, enumerable: false });
    defineProperty(G, name, { value: P, writable: true, configurable: true, enumerable: false });
  }

  // Regular expressions: regexp2 gives up on a backtracking match after its
  // process-wide timeout and reports "no match"; timing every match turns that silent
  // answer into a limit error.
  const RP = RegExp.prototype;
  const regexTimeout = lim.regexTimeoutMs;
  function timeRegex(obj, key) {
    const orig = obj[key];
    if (typeof orig !== 'function') return;
    const wrapped = {
      [typeof key === 'symbol' ? 'regex' : key](...args) {
        const start = elapsed();
        const r = apply(orig, this, args);
        const took = elapsed() - start;
        if (took >= regexTimeout) {
          abort('regex', 'a regular expression match took ' + Math.round(took) + 'ms, over the ' + regexTimeout + 'ms limit');
          throw new ErrorC('regex limit');
        }
        return r;
      },
    }[typeof key === 'symbol' ? 'regex' : key];
    defineProperty(obj, key, { value: wrapped, writable: true, configurable: true, enumerable: false });
  }
  for (const k of ['exec', 'test', Symbol.match, Symbol.matchAll, Symbol.replace, Symbol.search, Symbol.split]) {
    timeRegex(RP, k);
  }

  // bounded stringifies v, giving up (returning undefined) once the estimated output
  // passes limit: an object graph that shares subtrees can stringify to far more than
  // it occupies, and JSON.stringify ignores interrupts.
  const overflow = {};
  function bounded(v, limit, user, space) {
    let n = 0;
    try {
      return stringify(v, function (k, x) {
        if (user) x = apply(user, this, [k, x]);
        n += k.length + (typeof x === 'string' ? x.length + 2 : 6);
        if (n > limit) throw overflow;
        return x;
      }, space);
    } catch (e) {
      if (e === overflow) return overflow;
      throw e;
    }
  }

  const userStringify = {
    stringify(v, replacer, space) {
      if (isArray(replacer)) {
        const r = apply(stringify, JSON, [v, replacer, space]);
        if (typeof r === 'string' && r.length > maxJSON) refuse('JSON.stringify', r.length);
        return r;
      }
      const r = bounded(v, maxJSON, typeof replacer === 'function' ? replacer : null, space);
      if (r === overflow) refuse('JSON.stringify', 'more than ' + maxJSON + ' characters');
      return r;
    },
  }.stringify;
  defineProperty(JSON, 'stringify', { value: userStringify, writable: true, configurable: true, enumerable: false });

  // Dynamic code is not allowed: a workflow is the file that was loaded. This also
  // keeps goja's recursive parser away from script-made source.
  const FunctionProto = O.getPrototypeOf(function () {});
  const noEval = {
    eval() { throw new EvalError('dynamic code evaluation (eval, new Function) is disabled in workflows'); },
  }.eval;
  defineProperty(G, 'eval', { value: noEval, writable: true, configurable: true, enumerable: false });
  // goja has no async generators (esbuild lowers them), so there are three constructors.
  for (const f of [function () {}, async function () {}, function* () {}]) {
    const proto = O.getPrototypeOf(f);
    const stub = function Function() { return noEval(); };
    defineProperty(stub, 'prototype', { value: proto, writable: false, configurable: false, enumerable: false });
    defineProperty(proto, 'constructor', { value: stub, writable: true, configurable: true, enumerable: false });
    if (proto === FunctionProto) defineProperty(G, 'Function', { value: stub, writable: true, configurable: true, enumerable: false });
  }

  // JSON.parse recurses natively once per nesting level; a script-made string nested a
  // few million deep would overflow the Go stack and kill the process.
  const maxNesting = 10000;
  guard(JSON, 'parse', function (self, args) {
    const text = args[0];
    if (typeof text === 'string' && text.length > maxNesting && host.nesting(text, maxNesting) > maxNesting) {
      abort('stack', 'JSON.parse of text nested deeper than ' + maxNesting + ' levels');
      throw new ErrorC('stack limit');
    }
  });

  function deepFreeze(v) {
    if (v !== null && (typeof v === 'object' || typeof v === 'function') && !isFrozen(v)) {
      freeze(v);
      const ks = names(v);
      for (let i = 0; i < ks.length; i++) deepFreeze(v[ks[i]]);
    }
    return v;
  }

  function format(v, room) {
    switch (typeof v) {
      case 'string': return v;
      case 'undefined': return 'undefined';
      case 'function': return '[Function' + (v.name ? ': ' + v.name : '') + ']';
      case 'symbol': case 'bigint': return StringC(v);
    }
    if (v instanceof ErrorC) return StringC(v.stack || v);
    try {
      const s = bounded(v, room);
      return s === overflow ? '[too large to print]' : StringC(s);
    } catch (e) {
      return '[unprintable: ' + StringC(e && e.message) + ']';
    }
  }

  function printer(level) {
    return {
      [level](...args) {
        let line = '';
        for (let i = 0; i < args.length; i++) {
          if (i > 0) line += ' ';
          line += format(args[i], lim.maxConsoleBytes);
        }
        emit(level, line);
      },
    }[level];
  }
  const console = freeze({ log: printer('log'), info: printer('log'), debug: printer('log'), warn: printer('warn'), error: printer('error') });
  defineProperty(G, 'console', { value: console, writable: false, configurable: false, enumerable: false });

  // definition converts the default export to JSON, replacing every function by its
  // path from the root.
  function definition(def) {
    const seen = [];
    function walk(v, path) {
      if (typeof v === 'function') return path;
      if (v === null || typeof v !== 'object') return v;
      if (seen.indexOf(v) >= 0) throw new TypeError('the definition refers to itself at ' + path);
      seen.push(v);
      let out;
      if (isArray(v)) {
        out = [];
        for (let i = 0; i < v.length; i++) out.push(walk(v[i], path ? path + '.' + i : StringC(i)));
      } else {
        out = {};
        const ks = keys(v);
        for (let i = 0; i < ks.length; i++) out[ks[i]] = walk(v[ks[i]], path ? path + '.' + ks[i] : ks[i]);
      }
      seen.pop();
      return out;
    }
    return walk(def, '');
  }

  // resolve finds the function at path through own properties only, returning it
  // with the object it is a method of.
  function resolve(def, path) {
    let v = def, self;
    const parts = apply(StringC.prototype.split, path, ['.']);
    for (let i = 0; i < parts.length; i++) {
      if (v === null || (typeof v !== 'object' && typeof v !== 'function') || !apply(hasOwn, v, [parts[i]])) return undefined;
      self = v;
      v = v[parts[i]];
    }
    return typeof v === 'function' ? { self, fn: v } : undefined;
  }

  // describe returns [message, stack] for a thrown value without letting a hostile
  // value escape: any failure gives a fixed message.
  function describe(v) {
    try {
      if (v instanceof ErrorC) {
        const stack = v.stack;
        return [StringC(v.name) + ': ' + StringC(v.message), typeof stack === 'string' ? stack : ''];
      }
      if (v !== null && typeof v === 'object') {
        const s = bounded(v, 1000);
        return ['uncaught exception: ' + (s === overflow || s === undefined ? '[object]' : s), ''];
      }
      if (typeof v === 'string') return ['uncaught exception: ' + stringify(v), ''];
      return ['uncaught exception: ' + StringC(v), ''];
    } catch (e) {
      return ['uncaught exception (unprintable)', ''];
    }
  }


  // installZone makes Date's local-time methods use a fixed zone instead of the
  // process's time.Local (deterministic mode). offsetOf(ms) is getTimezoneOffset at ms
  // (minutes, UTC minus local); nameOf(ms) the zone's abbreviation. Date.parse of a
  // string without a zone still reads it in the process's zone.
  function installZone(offsetOf, nameOf) {
    const D = Date, DP = D.prototype;
    const getTime = DP.getTime, setTime = DP.setTime, UTC = D.UTC;
    const parts = ['FullYear', 'Month', 'Date', 'Hours', 'Minutes', 'Seconds', 'Milliseconds'];
    const time = (d) => apply(getTime, d, []);
    const shifted = (t) => new D(t - offsetOf(t) * 60000);
    const unshift = (local) => {
      const guess = local + offsetOf(local) * 60000;
      return local + offsetOf(guess) * 60000;
    };
    const method = (name, f) => defineProperty(DP, name, { value: f, writable: true, configurable: true, enumerable: false });
    for (const k of parts.concat(['Day'])) {
      const get = DP['getUTC' + k];
      method('get' + k, { ['get' + k]() { const t = time(this); return t !== t ? NaN : apply(get, shifted(t), []); } }['get' + k]);
    }
    method('getTimezoneOffset', function getTimezoneOffset() { const t = time(this); return t !== t ? NaN : offsetOf(t); });
    for (const k of parts) {
      const set = DP['setUTC' + k];
      method('set' + k, { ['set' + k](...args) {
        let t = time(this);
        if (t !== t) {
          if (k !== 'FullYear') return NaN;
          t = 0;
        }
        const s = shifted(t);
        apply(set, s, args);
        const local = time(s);
        return apply(setTime, this, [local !== local ? NaN : unshift(local)]);
      } }['set' + k]);
    }
    const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
    const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
    const pad = (n, w) => { let s = StringC(n); while (s.length < w) s = '0' + s; return s; };
    const datePart = (s) => days[s.getUTCDay()] + ' ' + months[s.getUTCMonth()] + ' ' + pad(s.getUTCDate(), 2) + ' ' + pad(s.getUTCFullYear(), 4);
    const timePart = (s, t) => {
      const off = -offsetOf(t), sign = off < 0 ? '-' : '+', a = Math.abs(off);
      return pad(s.getUTCHours(), 2) + ':' + pad(s.getUTCMinutes(), 2) + ':' + pad(s.getUTCSeconds(), 2) +
        ' GMT' + sign + pad(Math.floor(a / 60), 2) + pad(a % 60, 2) + ' (' + nameOf(t) + ')';
    };
    const format = (name, f) => method(name, { [name]() {
      const t = time(this);
      return t !== t ? 'Invalid Date' : f(shifted(t), t);
    } }[name]);
    format('toString', (s, t) => datePart(s) + ' ' + timePart(s, t));
    format('toDateString', (s) => datePart(s));
    format('toTimeString', (s, t) => timePart(s, t));
    format('toLocaleString', (s, t) => datePart(s) + ' ' + timePart(s, t));
    format('toLocaleDateString', (s) => datePart(s));
    format('toLocaleTimeString', (s, t) => timePart(s, t));
    const P = proxyConstructor(D, {
      construct(target, args, newTarget) {
        const nt = newTarget === P ? target : newTarget;
        if (args.length >= 2) {
          const local = apply(UTC, D, args);
          return construct(target, [local !== local ? NaN : unshift(local)], nt);
        }
        return construct(target, args, nt);
      },
      apply() { return apply(DP.toString, new D(), []); },
    });
    defineProperty(DP, 'constructor', { value: P, writable: true, configurable: true, enumerable: false });
    defineProperty(G, 'Date', { value: P, writable: true, configurable: true, enumerable: false });
  }

  if (lim.zone) installZone(host.zoneOffset, host.zoneName);

  return {
    parseFrozen(s) { return deepFreeze(parse(s)); },
    parse(s) { return parse(s); },
    deepFreeze,
    // serialize returns the JSON text of v, null for undefined, or the overflow marker.
    serialize(v, limit) {
      const s = bounded(v, limit);
      return s === undefined ? 'null' : s;
    },
    overflow,
    definition,
    resolve,
    describe,
  };
})
