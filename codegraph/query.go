package codegraph

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

const symCols = "path, name, kind, container, start_byte, end_byte, start_line, start_col, end_line, end_col"
const refCols = "path, name, start_byte, end_byte, start_line, start_col, end_line, end_col"

// Symbols returns the symbols of one file in source order.
func (g *Graph) Symbols(ctx context.Context, file string) ([]Symbol, error) {
	p, err := g.clean(file)
	if err != nil {
		return nil, err
	}
	return g.symbols(ctx, "SELECT "+symCols+" FROM symbols WHERE path = ? ORDER BY start_byte, name", p)
}

// Definitions returns the symbols called name, or Container.name, in the whole tree,
// ordered by file and position.
func (g *Graph) Definitions(ctx context.Context, name string) ([]Symbol, error) {
	if i := strings.LastIndex(name, "."); i > 0 && i < len(name)-1 {
		return g.symbols(ctx, "SELECT "+symCols+" FROM symbols WHERE name = ? AND container = ? ORDER BY path, start_byte", name[i+1:], name[:i])
	}
	return g.symbols(ctx, "SELECT "+symCols+" FROM symbols WHERE name = ? ORDER BY path, start_byte", name)
}

// DefinitionsIn is Definitions restricted to one file.
func (g *Graph) DefinitionsIn(ctx context.Context, file, name string) ([]Symbol, error) {
	p, err := g.clean(file)
	if err != nil {
		return nil, err
	}
	if i := strings.LastIndex(name, "."); i > 0 && i < len(name)-1 {
		return g.symbols(ctx, "SELECT "+symCols+" FROM symbols WHERE path = ? AND name = ? AND container = ? ORDER BY start_byte", p, name[i+1:], name[:i])
	}
	return g.symbols(ctx, "SELECT "+symCols+" FROM symbols WHERE path = ? AND name = ? ORDER BY start_byte", p, name)
}

// References returns every reference to name in the tree, by file and position.
func (g *Graph) References(ctx context.Context, name string) ([]Ref, error) {
	return g.refs(ctx, "SELECT "+refCols+" FROM refs WHERE name = ? ORDER BY path, start_byte", name)
}

// ReferencesFrom returns the references to name in one file, by position.
func (g *Graph) ReferencesFrom(ctx context.Context, file, name string) ([]Ref, error) {
	p, err := g.clean(file)
	if err != nil {
		return nil, err
	}
	return g.refs(ctx, "SELECT "+refCols+" FROM refs WHERE name = ? AND path = ? ORDER BY start_byte", name, p)
}

// Indexed reports whether file has rows in the index (it was indexed and parsed).
func (g *Graph) Indexed(ctx context.Context, file string) (bool, error) {
	p, err := g.clean(file)
	if err != nil {
		return false, err
	}
	var n int
	if err := g.db.QueryRowContext(ctx, "SELECT count(*) FROM files WHERE path = ?", p).Scan(&n); err != nil {
		return false, fmt.Errorf("codegraph: query: %w", err)
	}
	return n > 0, nil
}

func (g *Graph) symbols(ctx context.Context, q string, args ...any) ([]Symbol, error) {
	rows, err := g.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("codegraph: query: %w", err)
	}
	defer rows.Close()
	out := []Symbol{}
	for rows.Next() {
		var s Symbol
		if err := rows.Scan(&s.Path, &s.Name, &s.Kind, &s.Container, &s.StartByte, &s.EndByte, &s.StartLine, &s.StartCol, &s.EndLine, &s.EndCol); err != nil {
			return nil, fmt.Errorf("codegraph: query: %w", err)
		}
		out = append(out, s)
	}
	return out, wrapRows(rows)
}

func (g *Graph) refs(ctx context.Context, q string, args ...any) ([]Ref, error) {
	rows, err := g.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("codegraph: query: %w", err)
	}
	defer rows.Close()
	out := []Ref{}
	for rows.Next() {
		var r Ref
		if err := rows.Scan(&r.Path, &r.Name, &r.StartByte, &r.EndByte, &r.StartLine, &r.StartCol, &r.EndLine, &r.EndCol); err != nil {
			return nil, fmt.Errorf("codegraph: query: %w", err)
		}
		out = append(out, r)
	}
	return out, wrapRows(rows)
}

func wrapRows(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		return fmt.Errorf("codegraph: query: %w", err)
	}
	return nil
}
