// want: limit memory
export default { consumers: { c: { h() {
  return new Array(5e7).fill(0).length
} } } }
