// want: limit memory
// One decode whose text would pass the memory budget is refused before it allocates.
export default { consumers: { c: { h() {
  return new TextDecoder().decode(new Uint8Array(6 << 20)).length
} } } }
