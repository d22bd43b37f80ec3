// want: ok "returned"
// Timers left pending when the handler returns are cancelled: they never run later.
export default { consumers: { c: { h() {
  setInterval(() => { for (;;) {} }, 0)
  setTimeout(() => { throw new Error('must not run') }, 0)
  return 'returned'
} } } }
