package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/guestbuild"
)

// committedGuest returns the committed module of a Wasm example built from a language
// other than Go (a build.sh and a workflow.wasm beside the sources), or "".
func committedGuest(dir string) string {
	for _, f := range []string{"build.sh", "workflow.wasm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return ""
		}
	}
	abs, err := filepath.Abs(filepath.Join(dir, "workflow.wasm"))
	if err != nil {
		return ""
	}
	return abs
}

// committedGuests are the Wasm modules committed beside their sources, so that the
// fixtures and the conformance suite run on a machine without their toolchains.
var committedGuests = []struct {
	dir, module string
	tc          guestbuild.Toolchain
}{
	{"../../scripts/files-rust", "workflow.wasm", guestbuild.Rust},
	{"../../sandbox/wasm/testdata/guests/conformance-rust", "conformance.wasm", guestbuild.Rust},
	{"../../scripts/files-assemblyscript", "workflow.wasm", guestbuild.AssemblyScript},
	{"../../sandbox/wasm/testdata/guests/conformance-assemblyscript", "conformance.wasm", guestbuild.AssemblyScript},
}

// TestGuestBuildsAreCurrent rebuilds every committed guest from its sources when its
// toolchain is installed: the build must succeed, an example's fresh build must pass
// its fixtures, and with the pinned compiler the fresh build must be the committed
// bytes (run the directory's build.sh to refresh a stale module).
func TestGuestBuildsAreCurrent(t *testing.T) {
	for _, g := range committedGuests {
		t.Run(strings.TrimPrefix(g.dir, "../../"), func(t *testing.T) {
			t.Parallel() // the builds are minutes of compiler work on a loaded machine
			ctx := context.Background()
			version, err := g.tc.Version(ctx)
			if err != nil {
				skipWithoutToolchain(t, "%s toolchain missing, the committed %s is used as is: %v", g.tc.Name, g.module, err)
			}
			fresh := filepath.Join(t.TempDir(), g.module)
			if err := g.tc.Build(ctx, g.dir, fresh); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(fresh)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(g.dir, g.module))
			if err != nil {
				t.Fatalf("no committed module: %v (run %s/build.sh)", err, g.dir)
			}
			if version != g.tc.Pinned {
				t.Logf("%s is %q, not the pinned %q: the bytes are not compared", g.tc.Name, version, g.tc.Pinned)
			} else if !bytes.Equal(got, want) {
				t.Errorf("%s/%s is stale: a fresh build differs (%d bytes, committed %d); run %s/build.sh",
					g.dir, g.module, len(got), len(want), g.dir)
			}
			if _, err := os.Stat(filepath.Join(g.dir, "fixtures")); err != nil {
				return
			}
			code, out, errOut := cli(t, "", "test", fresh, "--fixtures", filepath.Join(g.dir, "fixtures"))
			if code != 0 || !strings.Contains(out, " 0 failed\n") {
				t.Errorf("fixtures of the fresh build: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// skipWithoutToolchain skips a test that needs a guest toolchain that is not
// installed, or fails it when SCRIPTHOST_REQUIRE_GUEST_TOOLCHAINS is set (as CI sets
// it, having installed them all).
func skipWithoutToolchain(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("SCRIPTHOST_REQUIRE_GUEST_TOOLCHAINS") != "" {
		t.Fatalf(format+" (and SCRIPTHOST_REQUIRE_GUEST_TOOLCHAINS is set)", args...)
	}
	t.Skipf(format, args...)
}
