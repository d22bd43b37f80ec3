// zone.js runs, in deterministic mode only, before the workflow module: it makes
// Date's local-time methods use the invocation's fixed zone instead of the process's
// time.Local (the locale methods are the web platform's, see platform.go). `host` holds Go functions: zoneOffset(ms) and zoneName(ms).
(function (host) {
  'use strict';
  const G = globalThis;
  const defineProperty = Object.defineProperty, StringC = String;

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

  installZone(host.zoneOffset, host.zoneName);
})
