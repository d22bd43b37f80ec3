package benchrun

import (
	"os"
	"sync"
	"testing"
)

// kept is the directory under which the benchmarks' workspaces live until the process
// ends (RemoveWorkspaces), rather than being removed as each benchmark function
// returns, as b.TempDir's are.
//
// Why: on ext4 without a journal, allocating an inode skips every inode of the block
// group freed in the last minutes, reading their inode table blocks (its
// recently_deleted check). A benchmark that removed its thousands of files when it
// returned, at every step of go test's ramp of b.N, made the next step's and the
// next benchmark's file creations pay for them: the same Files.write measured 2,002
// files/s early in a `make bench` and 934 files/s minutes later in the same process.
// A host's workspace is not a directory that a benchmark just emptied; kept until the
// end, the file-writing rows measure the host and the file system, not the benchmarks'
// clean-up.
var kept struct {
	sync.Mutex
	root string
}

// Workspace returns a new, empty directory for a benchmark's files, removed by
// RemoveWorkspaces when the process's benchmarks end.
func Workspace(b testing.TB) string {
	b.Helper()
	kept.Lock()
	defer kept.Unlock()
	if kept.root == "" {
		root, err := os.MkdirTemp("", "scripthost-bench-")
		if err != nil {
			b.Fatal(err)
		}
		kept.root = root
	}
	dir, err := os.MkdirTemp(kept.root, "workspace-")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// RemoveWorkspaces removes the directories Workspace handed out; a package whose
// benchmarks call Workspace calls it from its TestMain after the tests ran.
func RemoveWorkspaces() {
	kept.Lock()
	defer kept.Unlock()
	if kept.root != "" {
		_ = os.RemoveAll(kept.root)
		kept.root = ""
	}
}
