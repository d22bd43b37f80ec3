// want: limit memory
// String.prototype.concat builds its result in one native step: refused before it does.
export default { consumers: { c: { h() {
  const s = 'x'.repeat(1 << 20)
  return ''.concat(s, s, s, s, s, s, s, s, s, s).length
} } } }
