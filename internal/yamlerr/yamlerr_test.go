package yamlerr

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestFixNamesTheEditorLine(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unclosed flow sequence", "a: 1\nb: 2\nc: [1\n", "line 3:"},
		{"unclosed flow mapping", "a: 1\nb: {x: 1\n", "line 2:"},
		{"bad indentation (scanner)", "a:\n  b: 1\n c: 2\n", "line 3:"},
		{"tab (scanner)", "a: 1\n\tb: 2\n", "line 2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			err := Fix(yaml.Unmarshal([]byte(tt.doc), &v))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %s", err, tt.want)
			}
		})
	}
	if Fix(nil) != nil {
		t.Error("Fix(nil) is not nil")
	}
}
