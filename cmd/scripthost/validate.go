package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
)

func langOf(path string) (string, error) { return runtime.Language(path) }

// validateOnly bundles a workflow (see sandbox.Builder), loads it in its engine and
// checks its definition, without a ledger; it returns a one-line summary.
func validateOnly(ctx context.Context, path string, src []byte) (string, error) {
	lang, err := runtime.Language(path)
	if err != nil {
		return "", err
	}
	engines := host.NewEngines(host.EngineOptions{FakeClock: true})
	defer engines.Close(ctx)
	m, err := engines.For(ctx, lang)
	if err != nil {
		return "", err
	}
	eng := m[lang]
	// A JavaScript or TypeScript workflow is bundled with its imports first, as a
	// load bundles it: imports are checked, and what is refused at load is refused here.
	built, err := sandbox.Build(ctx, eng, path, src)
	if err != nil {
		return "", err
	}
	prog, err := eng.Load(ctx, sandbox.Source{Name: filepath.Base(path), Code: built.Code})
	if err != nil {
		return "", err
	}
	defer prog.Close(ctx)
	raw, err := prog.Definition(ctx)
	if err != nil {
		return "", err
	}
	def, err := runtime.ParseDefinition(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(def.Producers)) {
		parts = append(parts, fmt.Sprintf("producer %s (%s)", name, def.Producers[name].Schedule))
	}
	for _, name := range slices.Sorted(maps.Keys(def.Consumers)) {
		parts = append(parts, fmt.Sprintf("consumer %s (on %s)", name, strings.Join(def.Consumers[name].Subscribe, ", ")))
	}
	return fmt.Sprintf("%s: ok: topics %s; %s", path, strings.Join(def.Topics, ", "), strings.Join(parts, "; ")), nil
}
