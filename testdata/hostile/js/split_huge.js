// want: limit memory
export default { consumers: { c: { h() {
  return 'x'.repeat(3e6).split('').length
} } } }
