package workspace

import (
	"strings"
	"testing"
)

func TestApplyEdits(t *testing.T) {
	tests := []struct {
		name, text string
		edits      []Edit
		want, err  string
	}{
		{"one", "a b c\n", []Edit{{"b", "B"}}, "a B c\n", ""},
		{"in order", "x\n", []Edit{{"x", "y"}, {"y", "z"}}, "z\n", ""},
		{"missing", "abc", []Edit{{"q", "r"}}, "", "edit 1: search text not found"},
		{"ambiguous", "aa", []Edit{{"a", "b"}}, "", "occurs 2 times"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyEdits(tc.text, tc.edits)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want error containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestApplyDiff(t *testing.T) {
	text := "one\ntwo\nthree\nfour\n"
	diff := "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n two\n-three\n+THREE\n"
	got, err := ApplyDiff(text, diff)
	if err != nil || got != "one\ntwo\nTHREE\nfour\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	back, err := applyDiff(got, diff, true)
	if err != nil || back != text {
		t.Fatalf("reverse: got %q, %v", back, err)
	}
	if _, err := ApplyDiff("one\nTWO\nthree\n", diff); err == nil || !strings.Contains(err.Error(), "file line 2 does not match") {
		t.Fatalf("mismatch: got %v", err)
	}
	if _, err := ApplyDiff(text, "no hunks here"); err == nil {
		t.Fatal("garbage diff: got nil error")
	}
}
