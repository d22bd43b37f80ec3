// want: limit memory
export default { consumers: { c: { h() {
  return Array.from({ length: 1e9 }).length
} } } }
