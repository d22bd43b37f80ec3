// want: limit memory
// A thousand references to one 1 MB string join into 1 GB.
export default { consumers: { c: { h() {
  const s = 'x'.repeat(1e6)
  return new Array(1000).fill(s).join('').length
} } } }
