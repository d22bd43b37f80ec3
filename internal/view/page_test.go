package view

import (
	"errors"
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
