// want: limit timeout
// An endless chain of promise jobs: the job queue runs inside the runtime, so the
// interrupt reaches it too.
export default { consumers: { c: { h() {
  const f = () => Promise.resolve().then(f)
  return f()
} } } }
