// want: limit timers timeout memory
// Every zero-delay timer sets two more: the queue doubles each round.
export default { consumers: { c: { async h() {
  const spawn = () => { setTimeout(spawn, 0); setTimeout(spawn, 0) }
  spawn()
  await new Promise(() => {})
} } } }
