package bundle

import (
	"strings"
	"testing"
)

// TestReplacementsFitLines: no replacement helper takes more lines than the text it
// replaces (lighten pads a shorter one), so no line of a bundle moves.
func TestReplacementsFitLines(t *testing.T) {
	for _, r := range append([]replacement{commonJS}, replacements...) {
		if o, n := strings.Count(r.old, "\n"), strings.Count(r.new, "\n"); n > o {
			t.Errorf("%.30q…: %d lines in place of %d", r.new, n, o)
		}
	}
}

// TestLightenLeavesOthers: a bundle whose helpers are not the ones lighten knows, or
// that already names the helper lighten adds, is left as it is; so is a __commonJS call
// not printed as esbuild prints one.
func TestLightenLeavesOthers(t *testing.T) {
	for _, code := range []string{
		"var __copyProps = (to, from) => to;\n\n// a.js\nvar x = 1;\n",
		replacements[0].old + "var __getterDesc = 1;\n\n// a.js\nvar x = __getterDesc;\n",
		"no module comment\n",
	} {
		if got := string(lighten([]byte(code))); got != code {
			t.Errorf("%q became %q", code, got)
		}
	}
	// Two calls, one of which names another key than its module's path.
	code := commonJS.old + "\n// a.js\nvar require_a = __commonJS({\n  \"a.js\"(exports) {\n  }\n});\n" +
		"\n// b.js\nvar require_b = __commonJS({\n  \"c.js\"(exports) {\n  }\n});\n"
	if got := string(lighten([]byte(code))); got != code {
		t.Errorf("a call not as esbuild prints one: became\n%s", got)
	}
}
