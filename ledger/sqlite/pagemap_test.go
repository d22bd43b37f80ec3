//go:build sqlite_dbstat

package sqlite

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestPagesPerBtree attributes the WAL pages of a consumer run to the B-trees they
// belong to. The dbstat table it reads is compiled in by the sqlite_dbstat tag:
//
//	go test -tags sqlite_dbstat -run PagesPerBtree -v ./ledger/sqlite
func TestPagesPerBtree(t *testing.T) {
	for _, events := range []bool{false, true} {
		t.Run(fmt.Sprintf("lifecycle events=%v", events), func(t *testing.T) {
			s, pages := walPages(t, events)
			rows, err := s.r.QueryContext(context.Background(), `SELECT name, pageno FROM dbstat`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			owner := map[uint32]string{1: "page 1 (schema, file size)"}
			for rows.Next() {
				var name string
				var pg uint32
				if err := rows.Scan(&name, &pg); err != nil {
					t.Fatal(err)
				}
				if pg != 1 {
					owner[pg] = name
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, p := range pages {
				name, ok := owner[p]
				if !ok {
					name = "free list"
				}
				count[name]++
			}
			names := make([]string, 0, len(count))
			for n := range count {
				names = append(names, n)
			}
			sort.Slice(names, func(i, j int) bool { return count[names[i]] > count[names[j]] })
			var b strings.Builder
			for _, n := range names {
				fmt.Fprintf(&b, "%-32s %6.2f\n", n, float64(count[n])/pagesRuns)
			}
			t.Logf("%.1f pages per consumer run:\n%s", float64(len(pages))/pagesRuns, b.String())
		})
	}
}
