// want: limit timeout
// A timer that re-arms itself forever keeps the handler's promise pending: the
// invocation's timeout ends it, timers included.
export default { consumers: { c: { async h() {
  const again = () => setTimeout(again, 0)
  again()
  await new Promise(() => {})
} } } }
