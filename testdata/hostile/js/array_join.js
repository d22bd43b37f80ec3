// want: limit memory
export default { consumers: { c: { h() {
  return new Array(1e8).join('xx').length
} } } }
