// want: limit memory
// The constructor reached through an instance is guarded too.
export default { consumers: { c: { h() {
  const C = new Uint8Array(1).constructor
  return new C(2e9).length
} } } }
