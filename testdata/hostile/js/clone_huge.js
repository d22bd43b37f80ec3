// want: limit memory
// structuredClone of an array whose length is far past the memory budget.
export default { consumers: { c: { h() {
  const a = []
  a.length = 1e9
  return structuredClone(a).length
} } } }
