package wasm

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/sandbox"
)

// precompileEnv, when set to "CACHEDIR\nFILE...", makes the test binary compile the
// files into the cache dir and exit instead of running tests. The tests use it to
// compile Go-built guests in a second process built without -race (where compiling
// is twenty times faster), and to check that a second process reads the cache.
const precompileEnv = "SCRIPTHOST_WASM_PRECOMPILE"

func TestMain(m *testing.M) {
	if spec := os.Getenv(precompileEnv); spec != "" {
		if err := precompile(spec); err != nil {
			fmt.Fprintln(os.Stderr, "precompile:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func precompile(spec string) error {
	parts := strings.Split(spec, "\n")
	ctx := context.Background()
	eng, err := New(ctx, Options{CacheDir: parts[0]})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	for _, f := range parts[1:] {
		code, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		p, err := eng.Load(ctx, sandbox.Source{Name: f, Code: code})
		if err != nil {
			return err
		}
		p.Close(ctx)
	}
	return nil
}
