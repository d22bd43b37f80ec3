// want: limit timeout
// The interrupt must not be catchable: the loop catches everything it can.
export default { consumers: { c: { h() {
  for (;;) { try { for (;;) {} } catch (e) {} finally { continue } }
} } } }
