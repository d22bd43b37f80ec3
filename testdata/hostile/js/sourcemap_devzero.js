// want: logic dynamic code evaluation
// eval is disabled; its source could otherwise name a source map too.
export default { consumers: { c: { h() {
  return eval('1 + 1\n//# sourceMappingURL=file:///dev/zero')
} } } }
//# sourceMappingURL=/dev/zero
