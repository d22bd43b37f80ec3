// want: logic boom
export default { consumers: { c: { h() {
  const f = new Function('throw new Error("boom")\n//# sourceMappingURL=file:///dev/zero')
  f()
} } } }
