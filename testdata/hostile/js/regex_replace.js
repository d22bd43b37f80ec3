// want: limit regex
// A catastrophic pattern reached through String.prototype.replace, not exec or test.
export default { consumers: { c: { h() {
  return ('a'.repeat(40) + '!').replace(/(?=a)(a+)+$/, 'x')
} } } }
