// The prelude runs in every fresh runtime before the workflow module, and is kept
// small: the engine itself refuses the built-in calls that would allocate or loop past
// the memory budget in one step, times regular expressions and disables dynamic code
// (goja.Limits, set in instance.go). It captures what the host's helpers rely on before
// a script can replace it, installs Date's fixed zone in deterministic mode, and
// returns the helpers the Go side calls and the maker of the console (a lazy global).
// `host` holds Go functions: emit(level, text), stringify(v, max) (JSON text, or
// host.overflow past max), and in deterministic mode zoneOffset(ms) and zoneName(ms).
(function (host, lim) {
  'use strict';
  const G = globalThis;
  const O = Object;
  const freeze = O.freeze, defineProperty = O.defineProperty, keys = O.keys, isArray = Array.isArray;
  const stringify = JSON.stringify;
  const ErrorC = Error, StringC = String;
  const emit = host.emit, bounded = host.stringify, overflow = host.overflow;

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
    const R = Reflect, apply = R.apply, construct = R.construct;
    // goja's instanceof does not see through proxies of constructors: answer it for them.
    const proxyConstructor = (C, handler) => {
      handler.get = function (target, key, receiver) {
        if (key === Symbol.hasInstance) return (x) => x instanceof target;
        return R.get(target, key, receiver);
      };
      return new Proxy(C, handler);
    };
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

  return { definition, describe, console };
})
