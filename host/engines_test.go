package host_test

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
)

// The engines a host runs workflows with, used without a host: a workflow is bundled
// and loaded in the engine of its language, and its definition read.
func ExampleNewEngines() {
	ctx := context.Background()
	engines := host.NewEngines(host.EngineOptions{})
	defer engines.Close(ctx)

	path := "welcome.js"
	src := []byte(`export default { topics: ['signups'],
  consumers: { welcome: { subscribe: ['signups'], prepare() { return null; }, mutate() {}, next() { return {}; } } } };`)
	lang, err := runtime.Language(path)
	if err != nil {
		log.Fatal(err)
	}
	m, err := engines.For(ctx, lang)
	if err != nil {
		log.Fatal(err)
	}
	built, err := sandbox.Build(ctx, m[lang], path, src)
	if err != nil {
		log.Fatal(err)
	}
	prog, err := m[lang].Load(ctx, sandbox.Source{Name: path, Code: built.Code})
	if err != nil {
		log.Fatal(err)
	}
	defer prog.Close(ctx)
	raw, err := prog.Definition(ctx)
	if err != nil {
		log.Fatal(err)
	}
	def, err := runtime.ParseDefinition(raw)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(def.Topics)
	// Output:
	// [signups]
}

// TestEngines: JavaScript and TypeScript share one engine, the Wasm engine is built
// once and kept until Close (a later request builds a new one), and a language
// without an engine is refused by name.
func TestEngines(t *testing.T) {
	ctx := context.Background()
	engines := host.NewEngines(host.EngineOptions{WasmCacheDir: filepath.Join(t.TempDir(), "wasm")})
	defer engines.Close(ctx)
	m, err := engines.For(ctx, "js", "ts")
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["js"] == nil || m["js"] != m["ts"] {
		t.Fatalf("js and ts: got %v, want one engine for both", m)
	}
	if _, ok := m["wasm"]; ok {
		t.Fatal("wasm engine given where it was not asked for")
	}
	w1, err := engines.For(ctx, "wasm")
	if err != nil {
		t.Fatal(err)
	}
	w2, err := engines.For(ctx, "wasm")
	if err != nil {
		t.Fatal(err)
	}
	if w1["wasm"] == nil || w1["wasm"] != w2["wasm"] {
		t.Fatal("the Wasm engine was not kept between requests")
	}
	if err := engines.Close(ctx); err != nil {
		t.Fatal(err)
	}
	w3, err := engines.For(ctx, "wasm")
	if err != nil {
		t.Fatal(err)
	}
	if w3["wasm"] == w1["wasm"] {
		t.Fatal("a closed Wasm engine was handed out again")
	}
	if _, err := engines.For(ctx, "js", "rb"); err == nil || err.Error() != `host: no engine for language "rb"` {
		t.Fatalf("unknown language: got %v", err)
	}
}
