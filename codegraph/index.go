package codegraph

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// MaxFileSize is the largest file indexed; bigger ones are generated code or data.
const MaxFileSize = 2 << 20

// skipDirs are directories never indexed: version control, dependencies, build output.
var skipDirs = map[string]bool{"node_modules": true, "target": true, "vendor": true, "__pycache__": true, "dist": true}

// Stats says what an update did.
type Stats struct {
	Files     int           `json:"files"`     // source files seen
	Parsed    int           `json:"parsed"`    // parsed because new or changed
	Unchanged int           `json:"unchanged"` // same content hash: not parsed
	Removed   int           `json:"removed"`   // gone from the tree: rows deleted
	Symbols   int           `json:"symbols"`   // symbols written
	Refs      int           `json:"references"`
	Duration  time.Duration `json:"duration_ns"`
}

// Index brings the whole index up to date with the tree: new and changed files are
// parsed, files that are gone are dropped. Hidden directories, node_modules, target,
// vendor, dist and files over MaxFileSize are skipped.
func (g *Graph) Index(ctx context.Context) (Stats, error) {
	start := time.Now()
	var paths []string
	err := filepath.WalkDir(g.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != g.root && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symbolic links may leave the tree
		}
		if _, ok := LanguageOf(d.Name()); !ok {
			return nil
		}
		rel, err := filepath.Rel(g.root, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return Stats{}, fmt.Errorf("codegraph: walk %s: %w", g.root, err)
	}
	st, err := g.update(ctx, paths, true)
	st.Duration = time.Since(start)
	return st, err
}

// Refresh brings the rows of the given files (paths relative to the root) up to date:
// a changed file is parsed again, a deleted one dropped. Paths outside the root are
// refused.
func (g *Graph) Refresh(ctx context.Context, paths ...string) (Stats, error) {
	start := time.Now()
	clean := make([]string, 0, len(paths))
	for _, p := range paths {
		c, err := g.clean(p)
		if err != nil {
			return Stats{}, err
		}
		clean = append(clean, c)
	}
	st, err := g.update(ctx, clean, false)
	st.Duration = time.Since(start)
	return st, err
}

// clean turns p into a slash-separated path relative to the root, refusing escapes.
func (g *Graph) clean(p string) (string, error) {
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(g.root, p)
		if err != nil {
			return "", fmt.Errorf("codegraph: %s is outside %s", p, g.root)
		}
		p = rel
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) {
		return "", fmt.Errorf("codegraph: %s is outside %s", p, g.root)
	}
	return c, nil
}

type parsedFile struct {
	path, hash string
	parsed     *Parsed
	gone       bool
	err        error
}

// update re-parses the given files whose hash changed; with all, files in the index
// but not in paths are dropped.
func (g *Graph) update(ctx context.Context, paths []string, all bool) (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var only []string
	if !all {
		only = paths
	}
	known, err := g.hashes(ctx, only)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Files: len(paths)}
	work := make(chan int)
	results := make([]parsedFile, len(paths))
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = g.load(ctx, paths[i], known)
			}
		}()
	}
	for i := range paths {
		work <- i
	}
	close(work)
	wg.Wait()

	var changed []parsedFile
	seen := make(map[string]bool, len(paths))
	for _, r := range results {
		seen[r.path] = true
		switch {
		case r.err != nil:
			return st, r.err
		case r.gone:
			if _, ok := known[r.path]; ok {
				changed = append(changed, r)
				st.Removed++
			}
			st.Files--
		case r.parsed == nil:
			st.Unchanged++
		default:
			changed = append(changed, r)
			st.Parsed++
		}
	}
	if all {
		for p := range known {
			if !seen[p] {
				changed = append(changed, parsedFile{path: p, gone: true})
				st.Removed++
			}
		}
	}
	if len(changed) == 0 {
		return st, nil
	}
	sort.Slice(changed, func(i, j int) bool { return changed[i].path < changed[j].path })
	return st, g.write(ctx, changed, &st)
}

// load reads one file and parses it when its hash is not the one known.
func (g *Graph) load(ctx context.Context, p string, known map[string]string) parsedFile {
	l, ok := LanguageOf(p)
	if !ok {
		return parsedFile{path: p, err: fmt.Errorf("codegraph: %s: not a Go, Rust, JavaScript, TypeScript or Python file", p)}
	}
	src, err := g.fs.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return parsedFile{path: p, gone: true}
	}
	if err != nil {
		return parsedFile{path: p, err: fmt.Errorf("codegraph: read %s: %w", p, err)}
	}
	if len(src) > MaxFileSize {
		return parsedFile{path: p, gone: true}
	}
	sum := sha256.Sum256(src)
	h := hex.EncodeToString(sum[:])
	if known[p] == h {
		return parsedFile{path: p, hash: h}
	}
	parsed, err := Parse(ctx, l, p, src)
	if err != nil {
		return parsedFile{path: p, err: err}
	}
	return parsedFile{path: p, hash: h, parsed: parsed}
}

// hashes returns the content hashes the index holds: of the given paths, or of
// every file when paths is nil.
func (g *Graph) hashes(ctx context.Context, paths []string) (map[string]string, error) {
	q, args := "SELECT path, hash FROM files", []any(nil)
	if paths != nil {
		q += " WHERE path IN (" + strings.TrimSuffix(strings.Repeat("?,", len(paths)), ",") + ")"
		for _, p := range paths {
			args = append(args, p)
		}
		if len(paths) == 0 {
			return map[string]string{}, nil
		}
	}
	rows, err := g.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("codegraph: read index: %w", err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var p, h string
		if err := rows.Scan(&p, &h); err != nil {
			return nil, fmt.Errorf("codegraph: read index: %w", err)
		}
		m[p] = h
	}
	return m, rows.Err()
}

// write replaces the rows of the changed files in one transaction.
func (g *Graph) write(ctx context.Context, changed []parsedFile, st *Stats) (err error) {
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("codegraph: write index: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var s *sql.Stmt
		s, err = tx.PrepareContext(ctx, q)
		return s
	}
	delFile := prep("DELETE FROM files WHERE path = ?")
	delSyms := prep("DELETE FROM symbols WHERE path = ?")
	delRefs := prep("DELETE FROM refs WHERE path = ?")
	insFile := prep("INSERT INTO files(path, hash, language, syntax_errors) VALUES (?, ?, ?, ?)")
	insSym := prep(insertRows("symbols", 10, 1))
	insRef := prep(insertRows("refs", 8, 1))
	insSyms := prep(insertRows("symbols", 10, batch))
	insRefs := prep(insertRows("refs", 8, batch))
	if err != nil {
		return fmt.Errorf("codegraph: write index: %w", err)
	}
	exec := func(s *sql.Stmt, args ...any) {
		if err == nil {
			_, err = s.ExecContext(ctx, args...)
		}
	}
	for _, f := range changed {
		exec(delFile, f.path)
		exec(delSyms, f.path)
		exec(delRefs, f.path)
		if f.gone {
			continue
		}
		p := f.parsed
		exec(insFile, f.path, f.hash, p.Language, len(p.Errors))
		rows := make([][]any, len(p.Symbols))
		for i, s := range p.Symbols {
			rows[i] = []any{s.Path, s.Name, s.Kind, s.Container, s.StartByte, s.EndByte, s.StartLine, s.StartCol, s.EndLine, s.EndCol}
		}
		insertAll(exec, insSyms, insSym, rows)
		rows = make([][]any, len(p.Refs))
		for i, r := range p.Refs {
			rows[i] = []any{r.Path, r.Name, r.StartByte, r.EndByte, r.StartLine, r.StartCol, r.EndLine, r.EndCol}
		}
		insertAll(exec, insRefs, insRef, rows)
		st.Symbols += len(p.Symbols)
		st.Refs += len(p.Refs)
	}
	if err != nil {
		return fmt.Errorf("codegraph: write index: %w", err)
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("codegraph: write index: %w", err)
	}
	return nil
}

// batch is the rows one INSERT writes: fewer statements, far fewer calls into SQLite.
const batch = 64

// insertRows is an INSERT of n rows of cols columns into table. A reference the
// parser gave twice (two nodes at one place) is kept once.
func insertRows(table string, cols, n int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	return "INSERT OR IGNORE INTO " + table + " VALUES " + strings.TrimSuffix(strings.Repeat(row+",", n), ",")
}

// insertAll writes rows with the batch statement, the rest one by one.
func insertAll(exec func(*sql.Stmt, ...any), many, one *sql.Stmt, rows [][]any) {
	for len(rows) >= batch {
		args := make([]any, 0, batch*len(rows[0]))
		for _, r := range rows[:batch] {
			args = append(args, r...)
		}
		exec(many, args...)
		rows = rows[batch:]
	}
	for _, r := range rows {
		exec(one, r...)
	}
}
