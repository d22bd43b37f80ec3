package sqlite

// SetBeforeSync makes the store call f after a durable group commit and before the
// fsync that makes it durable: the crash tests stop a process in that window.
func SetBeforeSync(s *Store, f func()) {
	s.syncer.mu.Lock()
	defer s.syncer.mu.Unlock()
	s.syncer.beforeSync = f
}
