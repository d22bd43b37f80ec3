package wasm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost/sandbox"
)

// buildGuest builds the Go guest in dir (relative to this package) for wasip1 as a
// c-shared module, once per test process.
func buildGuest(t testing.TB, dir string) []byte {
	t.Helper()
	guestsMu.Lock()
	b, ok := guests[dir]
	if !ok {
		b = &guestBuild{}
		guests[dir] = b
	}
	guestsMu.Unlock()
	b.once.Do(func() { b.code, b.err = goBuildWasm(dir) })
	if b.err != nil {
		t.Fatalf("build %s: %v", dir, b.err)
	}
	return b.code
}

type guestBuild struct {
	once sync.Once
	code []byte
	err  error
}

var (
	guestsMu sync.Mutex
	guests   = map[string]*guestBuild{}
)

func goBuildWasm(dir string) ([]byte, error) {
	goBin := goCommand()
	out, err := os.MkdirTemp("", "scripthost-guest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(out)
	wasmFile := filepath.Join(out, "guest.wasm")
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", wasmFile, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, msg)
	}
	if raceEnabled {
		if err := precompileElsewhere(sharedCacheDir(), wasmFile); err != nil {
			return nil, err
		}
	}
	return os.ReadFile(wasmFile)
}

var (
	helperOnce sync.Once
	helperBin  string
	helperErr  error
)

// precompileElsewhere compiles files into cacheDir in another process: this
// package's test binary built without -race (see TestMain). wazero names its cache
// subdirectory after its version, which a test binary reports as "dev", so the helper
// must be a test binary too.
func precompileElsewhere(cacheDir string, files ...string) error {
	helperOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scripthost-wasm-helper-")
		if err != nil {
			helperErr = err
			return
		}
		helperBin = filepath.Join(dir, "wasm.test")
		cmd := exec.Command(goCommand(), "test", "-c", "-o", helperBin, ".")
		if msg, err := cmd.CombinedOutput(); err != nil {
			helperErr = fmt.Errorf("build helper: %v: %s", err, msg)
		}
	})
	if helperErr != nil {
		return helperErr
	}
	cmd := exec.Command(helperBin)
	cmd.Env = append(os.Environ(), precompileEnv+"="+strings.Join(append([]string{cacheDir}, files...), "\n"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("precompile: %v: %s", err, msg)
	}
	return nil
}

func goCommand() string {
	if goBin, err := exec.LookPath("go"); err == nil {
		return goBin
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func sharedCacheDir() string { return filepath.Join(os.TempDir(), "scripthost-wasm-test-cache") }

const conformanceDir = "testdata/guests/conformance"

var (
	sharedOnce sync.Once
	sharedEng  *Engine
	sharedErr  error
)

// sharedEngine is one engine for the tests that run Go guests, so that each guest is
// compiled once per process. Its disk cache lives in the system temp dir and is keyed
// by wazero version and module hash, so a stale entry is never used.
func sharedEngine(t testing.TB) *Engine {
	t.Helper()
	sharedOnce.Do(func() {
		sharedEng, sharedErr = New(context.Background(), Options{
			CacheDir: sharedCacheDir(),
			// The conformance suite expects the real clock outside deterministic mode.
			WASI: WASIConfig{RealClock: true},
		})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedEng
}

var (
	confMu   sync.Mutex
	confProg *Program
)

// conformance returns the loaded conformance guest (loaded once per process).
func conformance(t testing.TB) *Program {
	t.Helper()
	code := buildGuest(t, conformanceDir)
	confMu.Lock()
	defer confMu.Unlock()
	if confProg == nil {
		p, err := sharedEngine(t).load(context.Background(), sandbox.Source{Name: "conformance.wasm", Code: code})
		if err != nil {
			t.Fatalf("load conformance guest: %v", err)
		}
		confProg = p
	}
	return confProg
}
