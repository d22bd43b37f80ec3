// want: limit timers timeout
// Timers set in a loop without end: the pending-timer cap stops it long before memory.
export default { consumers: { c: { h() {
  for (;;) setTimeout(() => {}, 1000)
} } } }
