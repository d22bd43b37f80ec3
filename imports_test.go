package scripthost_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyDirection keeps the arrows of DESIGN.md pointing one way: the root
// package uses the standard library only, sandboxes never see the ledger, the runtime
// and the host pick no database driver and the runtime no engine.
func TestDependencyDirection(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command("go", "list", "-deps=false", "-f", `{{.ImportPath}}|{{join .Deps " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/scripthost/scripthost"
	drivers := []string{"github.com/mattn/go-sqlite3", "github.com/jackc/pgx", "github.com/lib/pq"}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, list, _ := strings.Cut(line, "|")
		deps[pkg] = strings.Fields(list)
	}
	if len(deps) < 5 {
		t.Fatalf("go list found %d packages, want the whole module", len(deps))
	}
	has := func(pkg, prefix string) bool {
		for _, d := range deps[pkg] {
			if d == prefix || strings.HasPrefix(d, prefix+"/") {
				return true
			}
		}
		return false
	}
	for _, d := range deps[mod] {
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") {
			t.Errorf("root package depends on %s: want the standard library only", d)
		}
	}
	for pkg := range deps {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, mod), "/")
		if rel == "sandbox" || strings.HasPrefix(rel, "sandbox/") {
			if has(pkg, mod+"/ledger") {
				t.Errorf("%s depends on the ledger: sandboxes reach it only through tools", pkg)
			}
		}
		if rel == "runtime" || rel == "host" || rel == "hostfuncs" || strings.HasPrefix(rel, "hostfuncs/") || rel == "sandbox" || strings.HasPrefix(rel, "sandbox/") {
			for _, drv := range drivers {
				if has(pkg, drv) {
					t.Errorf("%s depends on the SQL driver %s: only cmd/ and the ledger's own backends pick drivers", pkg, drv)
				}
			}
		}
		if rel == "runtime" {
			for _, eng := range []string{mod + "/sandbox/js", mod + "/sandbox/wasm", mod + "/ledger/sqlite", mod + "/ledger/postgres"} {
				if has(pkg, eng) {
					t.Errorf("runtime depends on %s: it must use the contracts only", eng)
				}
			}
		}
	}
}
