// want: limit memory timeout
// Keeping clone after clone of a large array: the heap watcher stops it.
export default { consumers: { c: { h() {
  const big = new Array(50000).fill('x')
  const copies = []
  for (;;) copies.push(structuredClone(big))
} } } }
