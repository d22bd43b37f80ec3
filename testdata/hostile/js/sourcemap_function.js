// want: logic dynamic code evaluation
export default { consumers: { c: { h() {
  const F = (function () {}).constructor
  const f = new F('throw new Error("boom")\n//# sourceMappingURL=file:///dev/zero')
  f()
} } } }
