// want: ok {"frozen":true,"polluted":true}
// Pollution stays inside this invocation: a later one sees clean prototypes (tested in Go).
export default { consumers: { c: { h() {
  Object.prototype.polluted = true
  Array.prototype.push = function () { throw new Error('pushed') }
  JSON.parse = () => ({ hacked: true })
  try { Echo.say = () => 'hijacked' } catch (e) {}
  try { Object.getPrototypeOf(Echo).say = () => 'hijacked' } catch (e) {}
  try { Echo.say.call = null } catch (e) {}
  return { frozen: Object.isFrozen(Echo) && Echo.say !== undefined, polluted: ({}).polluted }
} } } }
