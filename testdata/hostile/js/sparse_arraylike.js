// want: limit memory
export default { consumers: { c: { h() {
  return Array.prototype.lastIndexOf.call({ length: 4294967295 }, 1)
} } } }
