// want: limit memory timeout
// 100 MB through one TextDecoder, 4 MiB at a time, keeping the text: the heap watcher
// stops it.
export default { consumers: { c: { h() {
  const chunk = new Uint8Array(4 << 20).fill(97)
  const d = new TextDecoder()
  const parts = []
  for (let i = 0; i < 25; i++) parts.push(d.decode(chunk, { stream: true }))
  return parts.length
} } } }
