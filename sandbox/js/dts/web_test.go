package dts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/sandbox/js/dts"
)

// TestWebDeclarationsTypeCheck: web.d.ts is shipped, and a handler using every
// web-platform global type-checks against it with tsc in strict mode.
func TestWebDeclarationsTypeCheck(t *testing.T) {
	decl, err := dts.FS.ReadFile("web.d.ts")
	if err != nil {
		t.Fatalf("web.d.ts is not embedded: %v", err)
	}
	tsc, err := exec.LookPath("tsc")
	if err != nil {
		t.Skip("tsc is not installed (npm install -g typescript): the declarations are not type-checked")
	}
	usage, err := os.ReadFile("testdata/web_usage.ts")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"web.d.ts": decl,
		"use.ts":   usage,
		"tsconfig.json": []byte(`{"compilerOptions": {"strict": true, "noEmit": true, "lib": ["es2022"], "target": "es2022",
  "module": "es2022", "types": []}, "files": ["web.d.ts", "use.ts"]}`),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(tsc, "-p", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
}
