// want: limit memory
// One replaceAll call that multiplies a string's length, caught by the script: the
// refusal still ends the invocation.
export default { consumers: { c: { h() {
  const s = 'a'.repeat(1 << 20)
  try { return s.replaceAll('a', 'bbbbbbbb').length } catch (e) { return 'caught' }
} } } }
