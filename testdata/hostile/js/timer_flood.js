// want: limit timers memory timeout
// Timers set in a loop without end: the pending-timer cap (10,000) stops it, or the
// memory limit first: 10,000 pending callbacks hold about 8 MiB, this corpus's budget.
// TestPlatformLimits shows the cap with room to spare.
export default { consumers: { c: { h() {
  for (;;) setTimeout(() => {}, 1000)
} } } }
