// want: limit memory
export default { consumers: { c: { h() {
  return Math.max.apply(null, { length: 1e9 })
} } } }
