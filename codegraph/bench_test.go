package codegraph

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/benchcmp"
)

// repoSources copies the source files the index reads from this repository into a
// fresh directory, so that a benchmark may change them.
func repoSources(b *testing.B) string {
	b.Helper()
	dst := b.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		b.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if _, ok := LanguageOf(d.Name()); !ok || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	return dst
}

// BenchmarkIndexRepo indexes this repository's sources from scratch (target: under
// 10 s on 2 cores), against reading and hashing the same files: the floor of any
// index, and what an index with nothing changed costs.
func BenchmarkIndexRepo(b *testing.B) {
	ctx := context.Background()
	src := repoSources(b)
	benchcmp.Against(b, "index",
		benchcmp.Case{Run: func(b *testing.B) {
			for b.Loop() {
				_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						data, _ := os.ReadFile(p)
						_ = sha256.Sum256(data)
					}
					return err
				})
			}
		}},
		benchcmp.Case{Run: func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				g, err := Open(ctx, src, filepath.Join(b.TempDir(), fmt.Sprintf("cg%d.db", i)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := g.Index(ctx); err != nil {
					b.Fatal(err)
				}
				g.Close()
			}
		}})
}

// BenchmarkRefreshOneFile changes one file of the indexed repository and refreshes
// it (target: under 50 ms), against parsing that file alone.
func BenchmarkRefreshOneFile(b *testing.B) {
	ctx := context.Background()
	src := repoSources(b)
	g, err := Open(ctx, src, filepath.Join(b.TempDir(), "cg.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Index(ctx); err != nil {
		b.Fatal(err)
	}
	const file = "plan/step.go"
	orig, err := os.ReadFile(filepath.Join(src, file))
	if err != nil {
		b.Fatal(err)
	}
	l, _ := LanguageOf(file)
	benchcmp.Against(b, "refresh",
		benchcmp.Case{Run: func(b *testing.B) {
			for b.Loop() {
				if _, err := Parse(ctx, l, file, orig); err != nil {
					b.Fatal(err)
				}
			}
		}},
		benchcmp.Case{Run: func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				data := fmt.Appendf(append([]byte(nil), orig...), "\n// %d\n", i)
				if err := os.WriteFile(filepath.Join(src, file), data, 0o644); err != nil {
					b.Fatal(err)
				}
				st, err := g.Refresh(ctx, file)
				if err != nil || st.Parsed != 1 {
					b.Fatalf("refresh: %+v, %v", st, err)
				}
			}
		}})
}

// BenchmarkSymbolQuery looks a name up in the repository's index (target: under
// 5 ms), against the smallest query SQLite answers.
func BenchmarkSymbolQuery(b *testing.B) {
	ctx := context.Background()
	g, err := Open(ctx, repoSources(b), filepath.Join(b.TempDir(), "cg.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Index(ctx); err != nil {
		b.Fatal(err)
	}
	benchcmp.Against(b, "query",
		benchcmp.Case{Run: func(b *testing.B) {
			for b.Loop() {
				var n int
				if err := g.db.QueryRowContext(ctx, "SELECT count(*) FROM files WHERE path = ?", "plan/step.go").Scan(&n); err != nil {
					b.Fatal(err)
				}
			}
		}},
		benchcmp.Case{Run: func(b *testing.B) {
			for b.Loop() {
				syms, err := g.Definitions(ctx, "ToolName")
				if err != nil || len(syms) == 0 {
					b.Fatalf("got %v, %v", syms, err)
				}
			}
		}})
}
