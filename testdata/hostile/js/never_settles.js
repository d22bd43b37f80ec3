// want: logic never settles
export default { consumers: { c: { async h() {
  await new Promise(() => {})
} } } }
