// want: limit memory
export default { consumers: { c: { h() {
  return 'abc'.repeat(1e9).length
} } } }
