// want: ok 1
export default { consumers: { c: { h() { return 1 } } } }
//# sourceMappingURL=/etc/passwd
