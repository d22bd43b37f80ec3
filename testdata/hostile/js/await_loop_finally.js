// want: limit timeout
export default { consumers: { c: { async h() {
  try { for (;;) await null } finally { for (;;) {} }
} } } }
