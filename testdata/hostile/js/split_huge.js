// want: limit memory
export default { consumers: { c: { h() {
  return 'x'.repeat(1e6).split('').length
} } } }
