// want: ok 2
export default { consumers: { c: { h() {
  return eval('1 + 1\n//# sourceMappingURL=/dev/zero')
} } } }
//# sourceMappingURL=/dev/zero
