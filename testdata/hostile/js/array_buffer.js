// want: limit memory
export default { consumers: { c: { h() {
  return new ArrayBuffer(2e9).byteLength
} } } }
