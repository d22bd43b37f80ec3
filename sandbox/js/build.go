package js

import (
	"context"
	"fmt"

	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js/bundle"
)

var _ sandbox.Builder = (*Engine)(nil)

// Build bundles a workflow with the modules and packages it imports (see bundle.Build).
// One that imports nothing is its own text, so that its stored hash is the file's.
func (e *Engine) Build(ctx context.Context, entry string, code []byte) (sandbox.Built, error) {
	if err := ctx.Err(); err != nil {
		return sandbox.Built{}, fmt.Errorf("sandbox/js: build %s: %w", entry, err)
	}
	b, err := bundle.Build(entry, code)
	if err != nil {
		return sandbox.Built{}, err
	}
	files := make([]sandbox.SourceFile, len(b.Manifest))
	for i, f := range b.Manifest {
		files[i] = sandbox.SourceFile{Path: f.Path, SHA256: f.SHA256, Size: f.Size}
	}
	if b.Single() {
		return sandbox.Built{Code: code, Files: files}, nil
	}
	return sandbox.Built{Code: b.Code, Files: files}, nil
}
