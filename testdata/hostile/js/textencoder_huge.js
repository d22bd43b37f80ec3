// want: limit memory
// Encoding a string whose bytes would pass the memory budget is refused.
export default { consumers: { c: { h() {
  return new TextEncoder().encode('€'.repeat(3 << 20)).length
} } } }
