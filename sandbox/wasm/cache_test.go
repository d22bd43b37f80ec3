package wasm

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost/sandbox"
)

// cacheFiles lists the regular files under dir with their modification times.
func cacheFiles(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	files := map[string]time.Time{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files[path] = info.ModTime()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sameFiles(a, b map[string]time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !w.Equal(v) {
			return false
		}
	}
	return true
}

// TestDiskCacheAcrossEngines loads a module in one engine, then in a second engine
// over the same cache dir: the first writes the compiled module, the second reads it
// and writes nothing (wazero rewrites the entry whenever it compiles).
func TestDiskCacheAcrossEngines(t *testing.T) {
	dir := t.TempDir()
	src := readFixture(t, "good.wasm")

	e1 := newEngine(t, Options{CacheDir: dir})
	if _, err := e1.Load(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	first := cacheFiles(t, dir)
	if len(first) == 0 {
		t.Fatal("got no files in the cache dir after the first load")
	}
	time.Sleep(20 * time.Millisecond) // so that a rewrite would show in the mtime

	e2 := newEngine(t, Options{CacheDir: dir})
	p, err := e2.Load(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if second := cacheFiles(t, dir); !sameFiles(first, second) {
		t.Errorf("cache dir changed on the second load: got %v, want %v", second, first)
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "hello"})
	if err != nil || string(res.Value) != `"hello"` {
		t.Errorf("invoke from the cached module: got %s, %v", res.Value, err)
	}
}

// TestDiskCacheAcrossProcesses compiles a Go-built guest in another process (this
// package's test binary, see TestMain), then loads it here from the cache without
// compiling it.
func TestDiskCacheAcrossProcesses(t *testing.T) {
	code := buildGuest(t, conformanceDir)
	dir := t.TempDir()
	wasmFile := filepath.Join(t.TempDir(), "conformance.wasm")
	if err := os.WriteFile(wasmFile, code, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := precompileElsewhere(dir, wasmFile); err != nil {
		t.Fatal(err)
	}
	first := cacheFiles(t, dir)
	if len(first) == 0 {
		t.Fatal("got no files in the cache dir after the first process")
	}
	time.Sleep(20 * time.Millisecond)

	e := newEngine(t, Options{CacheDir: dir})
	p, err := e.Load(context.Background(), sandbox.Source{Name: "conformance.wasm", Code: code})
	if err != nil {
		t.Fatal(err)
	}
	if second := cacheFiles(t, dir); !sameFiles(first, second) {
		t.Errorf("cache dir changed when the second process loaded the module: got %v, want %v", second, first)
	}
	res, err := p.Invoke(context.Background(), sandbox.Invocation{Function: "fresh_instance"})
	if err != nil || string(res.Value) != "1" {
		t.Errorf("invoke: got %s, %v; want 1", res.Value, err)
	}
}

func TestSharedModuleOutlivesOneProgram(t *testing.T) {
	e := newEngine(t, Options{})
	p1 := load(t, e, "good.wasm")
	p2 := load(t, e, "good.wasm")
	if p1.module != p2.module {
		t.Error("two loads of the same bytes compiled twice")
	}
	if err := p1.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p2.Invoke(context.Background(), sandbox.Invocation{Function: "hello"}); err != nil {
		t.Errorf("invoke after the other program closed: %v", err)
	}
	if _, err := p1.Invoke(context.Background(), sandbox.Invocation{Function: "hello"}); err == nil {
		t.Error("invoke of a closed program: got nil error, want one")
	}
}
