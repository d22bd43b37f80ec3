//go:build !linux

package workspace

// directWrites says whether Write takes the direct path on this system.
const directWrites = false

// writeDirect is the direct write path, built on Linux only: elsewhere every write
// takes the general path.
func (w *Workspace) writeDirect(op, p, clean string, content []byte) (done bool, err error) {
	return false, nil
}
