package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunsPageUsesIndex checks that a page of the runs listing, newest first after a
// cursor, is read from the runs_created index (migration 11) rather than by sorting
// the whole table.
func TestRunsPageUsesIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT id FROM runs
		WHERE (created_at < ? OR (created_at = ? AND id < ?))
		ORDER BY created_at DESC, id DESC LIMIT 200`, 1, 1, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "; ")
	if !strings.Contains(got, "runs_created") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("runs page plan: %s; want it read from the runs_created index, unsorted", got)
	}
}
