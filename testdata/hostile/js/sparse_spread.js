// want: limit memory
// Spreading a sparse array iterates natively over every hole.
export default { consumers: { c: { h() {
  const a = []
  a[1e8] = 1
  return Math.max(...a)
} } } }
