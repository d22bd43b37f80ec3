// want: limit output
// A tool input past MaxOutputBytes (1 MiB) is a limit error, not an engine panic; the
// script cannot catch it and carry on.
export default { consumers: { c: { async h() {
  try { await Echo.say({ s: 'x'.repeat(2 << 20) }) } catch (e) {}
  return 1
} } } }
