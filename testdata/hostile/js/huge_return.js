// want: limit output
export default { consumers: { c: { h() {
  return 'x'.repeat(2 * 1024 * 1024)
} } } }
