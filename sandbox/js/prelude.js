// The prelude runs in every fresh runtime before the workflow module. It installs the
// guards that are not built into the engine (String methods that build a string in one
// step, the timing of regular expressions, Date in a fixed zone), the console, and
// returns the helpers the Go side calls. The engine refuses the other built-ins that
// allocate or loop in one step itself (goja.Limits, set in instance.go).
// `host` holds Go functions: abort(kind, detail), elapsed() (milliseconds, monotonic),
// emit(level, text), stringify(v, max) (JSON text, or the overflow marker past max).
(function (host, lim) {
  'use strict';
  const G = globalThis;
  const O = Object, A = Array, R = Reflect;
  const freeze = O.freeze, defineProperty = O.defineProperty, keys = O.keys, isArray = A.isArray;
  const hasOwn = O.prototype.hasOwnProperty;
  const apply = R.apply, construct = R.construct;
  const stringify = JSON.stringify;
  const ProxyC = Proxy, ErrorC = Error, StringC = String;
  const abort = host.abort, elapsed = host.elapsed, emit = host.emit, bounded = host.stringify;
  const overflow = host.overflow;

  // maxElems and maxChars bound what one built-in call may allocate: a Value is about
  // 16 bytes, a string character one or two.
  const maxElems = Math.floor(lim.memoryBytes / 16);
  const maxChars = Math.floor(lim.memoryBytes / 2);

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
  // console makes the console global, on its first use.
  function console() {
    return freeze({ log: printer('log'), info: printer('log'), debug: printer('log'), warn: printer('warn'), error: printer('error') });
  }

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

  // prims are what platform.js, which runs on first use, takes from the built-ins.
  const prims = {
    Object: O, Reflect: R, defineProperty, keys, freeze, apply, ownKeys: R.ownKeys,
    String: StringC, Error: ErrorC, TypeError, RangeError, numberValueOf: Number.prototype.valueOf,
  };
  return { definition, resolve, describe, console, prims };
})
