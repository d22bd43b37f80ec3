package httptool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad: an HTTP tools file, JSON or YAML, is a list of tools or an error naming
// the file, never a panic, and a secret from the environment never shows in an error.
func FuzzLoad(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "tools.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed, true)
	f.Add([]byte(`[{"namespace":"A","method":"b","url":"http://127.0.0.1/x","headers":{"Authorization":"Bearer ${TOKEN}"}}]`), false)
	f.Add([]byte(`{"tools":[{"namespace":"A","method":"b","url":"http://127.0.0.1/{id}","input_schema":{"type":"object"}}]}`), false)
	dir := f.TempDir()
	const secret = "fuzz-secret-token-value"
	env := func(string) (string, bool) { return secret, true }
	f.Fuzz(func(t *testing.T, raw []byte, yaml bool) {
		path := filepath.Join(dir, "tools.json")
		if yaml {
			path = filepath.Join(dir, "tools.yaml")
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path, env)
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Fatalf("got the secret in the error %q", err)
		}
	})
}
