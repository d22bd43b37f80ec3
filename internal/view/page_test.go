package view

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// TestCursorRoundTrip: a cursor carries its key to the nanosecond, and anything a
// listing did not print is refused with ErrBadCursor.
func TestCursorRoundTrip(t *testing.T) {
	k := ledger.PageKey{At: time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC), ID: "01a2.x/y"}
	got, err := DecodeCursor(EncodeCursor(k))
	if err != nil || !got.At.Equal(k.At) || got.ID != k.ID {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, k)
	}
	for _, bad := range []string{"", "nope", "c1.", "c1.!!", "c2." + EncodeCursor(k)[3:], "c1.MTIz", "c1.eC55"} {
		if _, err := DecodeCursor(bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("DecodeCursor(%q): %v, want ErrBadCursor", bad, err)
		}
	}
}

// TestSlicePage pages a listing held in memory like the ledger pages its own: newest
// first across pages, oldest first within one, every item once, with the search.
func TestSlicePage(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type item struct {
		id string
		at time.Time
	}
	var items []item
	for i := range 7 {
		items = append(items, item{id: fmt.Sprintf("x%d", i), at: base.Add(time.Duration(i/2) * time.Second)})
	}
	key := func(it item) ledger.PageKey { return ledger.PageKey{At: it.at, ID: it.id} }
	match := func(it item, q string) bool { return Contains(q, it.id) }
	var seen []string
	l := List{Limit: 3}
	for range 5 {
		pg, err := SlicePage(items, l, key, match)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(pg.Items) - 1; i >= 0; i-- {
			seen = append(seen, pg.Items[i].id)
		}
		if pg.Next == "" {
			break
		}
		l.Cursor = pg.Next
	}
	if want := []string{"x6", "x5", "x4", "x3", "x2", "x1", "x0"}; !slices.Equal(seen, want) {
		t.Errorf("pages: %v, want %v", seen, want)
	}
	pg, err := SlicePage(items, List{Search: "X4"}, key, match)
	if err != nil || len(pg.Items) != 1 || pg.Items[0].id != "x4" || pg.Next != "" {
		t.Errorf("search X4: %+v, %v", pg, err)
	}
	if _, err := SlicePage(items, List{Cursor: "junk"}, key, match); !errors.Is(err, ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}
