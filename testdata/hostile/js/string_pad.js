// want: limit memory
export default { consumers: { c: { h() {
  return ''.padEnd(2e9, 'x').length
} } } }
