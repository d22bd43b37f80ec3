// want: logic uncaught exception
export default { consumers: { c: { h() {
  throw 'a string'
} } } }
