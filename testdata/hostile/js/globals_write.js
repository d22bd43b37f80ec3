// want: ok {"a":1,"list":[1]}
'use strict'
export default { consumers: { c: { h() {
  const tries = [
    () => { __state__ = { a: 2 } },
    () => { __state__.a = 2 },
    () => { __state__.list.push(2) },
    () => { delete __state__.a },
    () => { Object.defineProperty(globalThis, '__state__', { value: 3 }) },
    () => { globalThis.__state__ = 4 },
    () => { Object.setPrototypeOf(__state__, { a: 5 }) },
  ]
  for (const t of tries) { try { t() } catch (e) {} }
  return __state__
} } } }
