// Package hosttest runs workflows against fixture files inside go test, for embedders
// that register their own tools: the same fixture files and the same runner as
// `scripthost test` (see docs/testing.md). Each fixture runs on a fresh SQLite ledger
// in a temporary directory, with a fixed clock and seeded randomness; every tool call
// is answered from the fixture, while the tools' names, schemas and read-only
// predicates stay the real ones, so validation and phase checks are those of
// production.
//
//	var update = flag.Bool("update", false, "rewrite fixture expectations")
//
//	func TestWorkflow(t *testing.T) {
//		hosttest.Run(t, "workflow.ts", "fixtures", hosttest.Options{
//			Tools:  []*hostfuncs.Tool{mailSend, mailLookup},
//			Update: *update,
//		})
//	}
package hosttest

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost/fixture"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/sandbox"
)

// Options configure a fixture run.
type Options struct {
	// Tools are the embedder's tools the workflow calls. Their Execute is never
	// called: the fixtures answer.
	Tools []*hostfuncs.Tool
	// Update rewrites the expectations of fixtures that differ (golden style).
	Update bool
	// Limits bound every invocation (zero: sandbox.DefaultLimits).
	Limits sandbox.Limits
	// WasmCacheDir holds compiled Wasm modules; empty uses the user cache directory.
	WasmCacheDir string
}

func openStore(ctx context.Context, path string, clock func() time.Time, newID func() string) (ledger.Store, error) {
	return sqlite.Open(ctx, path, sqlite.Options{Clock: clock, NewID: newID})
}

// newRunner is the fixture runner of opts, on SQLite ledgers.
func newRunner(opts Options) (*fixture.Runner, error) {
	return fixture.NewRunner(fixture.Options{
		OpenStore:    openStore,
		Tools:        opts.Tools,
		Limits:       opts.Limits,
		WasmCacheDir: opts.WasmCacheDir,
	})
}

// Check runs the workflow at path against the fixture file or every fixture file
// under the directory fixtures, and returns the results and the report that
// `scripthost test` would print.
func Check(ctx context.Context, path, fixtures string, opts Options) ([]*fixture.Result, string, error) {
	files, err := fixture.Load(fixtures)
	if err != nil {
		return nil, "", err
	}
	r, err := newRunner(opts)
	if err != nil {
		return nil, "", err
	}
	defer r.Close(context.WithoutCancel(ctx))
	results := make([]*fixture.Result, 0, len(files))
	for _, f := range files {
		results = append(results, fixture.Check(ctx, r, path, f, opts.Update))
	}
	var b bytes.Buffer
	fixture.Report(&b, filepath.ToSlash(path), results)
	return results, b.String(), nil
}

// Run runs the workflow at path against each fixture as a subtest of t named after
// the fixture file. A fixture that differs from its expectations, or makes a call
// no recorded response answers, fails its subtest with the report's lines.
func Run(t *testing.T, path, fixtures string, opts Options) {
	t.Helper()
	results, _, err := Check(t.Context(), path, fixtures, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		t.Run(res.Name, func(t *testing.T) {
			var b bytes.Buffer
			fixture.Report(&b, res.Name, []*fixture.Result{res})
			switch {
			case res.Updated:
				t.Logf("expectations rewritten:\n%s", b.String())
			case !res.Passed():
				t.Errorf("fixture failed:\n%s", b.String())
			}
		})
	}
}
