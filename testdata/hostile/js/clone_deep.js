// want: limit stack memory timeout
// structuredClone of a value nested 20,000 deep: refused at the nesting limit JSON.parse
// has, before the result could overflow a recursive serializer (or, under a budget this
// small, by the heap watcher on the way there, or on a loaded machine by the timeout;
// TestStructuredCloneDepthLimit checks the nesting limit itself).
export default { consumers: { c: { h() {
  let v = {}
  for (let i = 0; i < 20000; i++) v = { v }
  return structuredClone(v) === v
} } } }
