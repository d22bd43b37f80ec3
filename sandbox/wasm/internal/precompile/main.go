// Command precompile compiles Wasm modules into a wazero compilation cache directory,
// so that a later process (a host, or a test binary built with -race, where compiling
// a Go-built guest is twenty times slower) loads them without compiling.
//
//	go run ./sandbox/wasm/internal/precompile -cache DIR module.wasm...
//
// A module is compiled with the engine's runtime configuration; its ABI and
// definition are checked as Load checks them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/wasm"
)

func main() {
	cache := flag.String("cache", "", "compilation cache directory (default: the engine's)")
	pages := flag.Uint("max-memory-pages", 0, "the engine's MaxMemoryPages (default: sandbox.DefaultLimits)")
	flag.Parse()
	if err := run(*cache, uint32(*pages), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "precompile:", err)
		os.Exit(1)
	}
}

func run(cache string, pages uint32, files []string) error {
	ctx := context.Background()
	eng, err := wasm.New(ctx, wasm.Options{CacheDir: cache, Limits: sandbox.Limits{MaxMemoryPages: pages}})
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	for _, f := range files {
		code, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		p, err := eng.Load(ctx, sandbox.Source{Name: filepath.Base(f), Code: code})
		if err != nil {
			return err
		}
		if err := p.Close(ctx); err != nil {
			return err
		}
	}
	return nil
}
