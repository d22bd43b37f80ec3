// want: logic QuotaExceededError
// getRandomValues over 65,536 bytes is refused as the Web Crypto API says.
export default { consumers: { c: { h() {
  return crypto.getRandomValues(new Uint8Array(65537)).length
} } } }
