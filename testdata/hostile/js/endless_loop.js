// want: limit timeout
export default { consumers: { c: { h() {
  for (;;) {}
} } } }
