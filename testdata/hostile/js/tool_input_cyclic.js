// want: logic JSON
// A tool input that cannot be serialized is a script error, not an engine panic.
export default { consumers: { c: { async h() {
  const a = {}
  a.self = a
  await Echo.say(a)
} } } }
