// want: limit tool_calls
export default { consumers: { c: { async h() {
  for (;;) await Echo.say({ flood: true })
} } } }
