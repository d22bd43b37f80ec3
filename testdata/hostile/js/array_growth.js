// want: limit memory timeout
// Growth one element at a time is slow in goja: it ends with whichever limit comes first.
export default { consumers: { c: { h() {
  const a = []
  for (let i = 0; ; i++) a.push({ i, s: 'x' + i })
} } } }
