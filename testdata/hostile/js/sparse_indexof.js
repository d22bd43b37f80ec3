// want: limit memory
// Array methods loop natively over 0..length, holes included, ignoring interrupts.
export default { consumers: { c: { h() {
  const a = []
  a.length = 4294967295
  return a.indexOf(1)
} } } }
