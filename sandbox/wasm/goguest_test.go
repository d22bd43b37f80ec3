package wasm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
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
		abs, err := filepath.Abs(".")
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(goBin, "run", "./internal/precompile", "-cache", sharedCacheDir(), wasmFile)
		cmd.Dir = abs
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("precompile: %v: %s", err, msg)
		}
	}
	return os.ReadFile(wasmFile)
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
