// want: limit regex
// The lookahead makes goja use its backtracking engine (regexp2).
export default { consumers: { c: { h() {
  return /(?=a)(a+)+$/.test('a'.repeat(40) + '!')
} } } }
