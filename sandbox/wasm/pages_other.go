//go:build !linux

package wasm

import "errors"

// pageTracker is Linux's only (pages_linux.go): elsewhere memories are reset by
// copying all of them.
type pageTracker struct{}

func tracker() (*pageTracker, error) {
	return nil, errors.New("written-page tracking unavailable: Linux only")
}

func (*pageTracker) track([]byte) error                   { return errors.ErrUnsupported }
func (*pageTracker) written([]byte, func(int, int)) error { return errors.ErrUnsupported }

func mapMemory(int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapMemory([]byte) {}
