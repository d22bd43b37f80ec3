// want: limit tool_calls
export default { consumers: { c: { h() {
  for (;;) Echo.say({ flood: true })
} } } }
