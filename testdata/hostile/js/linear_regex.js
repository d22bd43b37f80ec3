// want: ok false
// Without backreferences or lookaround goja runs the pattern on Go's linear engine.
export default { consumers: { c: { h() {
  return /(a+)+$/.test('a'.repeat(40) + '!')
} } } }
