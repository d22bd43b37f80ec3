// want: limit timeout memory
// An endless chain of promise jobs: the job queue runs inside the runtime, so the
// interrupt reaches it too. The chain of pending promises grows, so the memory
// budget may end it first.
export default { consumers: { c: { h() {
  const f = () => Promise.resolve().then(f)
  return f()
} } } }
