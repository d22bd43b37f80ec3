// want: limit timeout
// An interval that is never cleared, awaited by nothing that settles.
export default { consumers: { c: { async h() {
  let n = 0
  setInterval(() => { n++ }, 1)
  await new Promise(() => {})
} } } }
