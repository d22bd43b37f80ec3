// want: limit memory
// Encoding a string whose bytes could pass the memory budget (three per UTF-16 unit at
// most) is refused before it allocates.
export default { consumers: { c: { h() {
  return new TextEncoder().encode('x'.repeat(3 << 20)).length
} } } }
