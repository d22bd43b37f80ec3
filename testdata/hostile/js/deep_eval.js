// want: logic dynamic code evaluation
// goja's parser recurses per nesting level too; dynamic code is disabled.
export default { consumers: { c: { h() {
  return (0, eval)('['.repeat(1e6))
} } } }
