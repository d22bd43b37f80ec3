// want: limit memory timeout
export default { consumers: { c: { h() {
  let a = [1]
  for (let i = 0; i < 30; i++) a = [a, a]
  return a.flat(Infinity).length
} } } }
