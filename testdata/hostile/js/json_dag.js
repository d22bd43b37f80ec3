// want: limit memory
// A shared subtree stringifies to 2^40 copies of its leaf; JSON.stringify ignores interrupts.
export default { consumers: { c: { h() {
  let a = ['x'.repeat(100000)]
  for (let i = 0; i < 40; i++) a = [a, a]
  return JSON.stringify(a).length
} } } }
