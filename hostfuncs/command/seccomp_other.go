//go:build !linux || !(amd64 || arm64)

package command

// seccompFilter is nil where no system call table is kept: commands then run without
// a seccomp filter, confined by the rest (no capabilities, no new user namespaces).
func seccompFilter() []byte { return nil }
