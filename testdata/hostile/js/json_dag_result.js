// want: limit output
// The same graph returned as the result.
export default { consumers: { c: { h() {
  let a = ['x'.repeat(100000)]
  for (let i = 0; i < 40; i++) a = [a, a]
  return a
} } } }
