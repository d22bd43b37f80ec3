package main

import (
	"testing"

	"github.com/scripthost/scripthost/ledger"
)

func TestShowFoldsPackages(t *testing.T) {
	m := []ledger.SourceFile{
		{Path: "node_modules/date-fns/format.js", SHA256: "a", Size: 10},
		{Path: "workflow.ts", SHA256: "b", Size: 5},
		{Path: "node_modules/@scope/pkg/index.js", SHA256: "c", Size: 3},
		{Path: "node_modules/date-fns/locale/en.js", SHA256: "d", Size: 20},
		{Path: "node_modules/@scope/pkg/node_modules/inner/x.js", SHA256: "e", Size: 1},
		{Path: "lib/node_modules.ts", SHA256: "f", Size: 2},
	}
	got := packageRows(m)
	want := []struct {
		path  string
		files int
		size  int64
	}{
		{"node_modules/date-fns/ (2 files)", 2, 30},
		{"workflow.ts", 1, 5},
		{"node_modules/@scope/pkg/ (1 file)", 1, 3},
		{"node_modules/@scope/pkg/node_modules/inner/ (1 file)", 1, 1},
		{"lib/node_modules.ts", 1, 2},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Path != w.path || got[i].Files != w.files || got[i].Size != w.size {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], w)
		}
	}
	if got[0].SHA256 == "" || got[0].SHA256 == "a" || got[1].SHA256 != "b" {
		t.Errorf("hashes: %q %q", got[0].SHA256, got[1].SHA256)
	}
}
