// want: logic uncaught exception
export default { consumers: { c: { h() {
  throw { code: 7 }
} } } }
