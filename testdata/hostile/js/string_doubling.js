// want: limit memory
export default { consumers: { c: { h() {
  let s = 'x'
  const keep = []
  for (;;) { s = s + s; keep.push(s) }
} } } }
