package httptool_test

import (
	"strings"
	"testing"

	"github.com/scripthost/scripthost/hostfuncs/httptool"
)

// TestShortSecretRefusedAtLoad: a header secret too short to be told apart from
// ordinary text (from the environment, or a literal credential) is refused when the
// file is loaded, naming the header and never the value.
func TestShortSecretRefusedAtLoad(t *testing.T) {
	short := func(name string) (string, bool) {
		switch name {
		case "SHORT":
			return "k9z", true
		case "LONG":
			return "long-enough-secret", true
		}
		return "", false
	}
	tests := []struct {
		name, headers, want string
	}{
		{"env", `{X-Api-Key: "${SHORT}"}`, "header X-Api-Key"},
		{"env in bearer", `{Authorization: "Bearer ${SHORT}"}`, "header Authorization"},
		{"literal credential", `{Authorization: "Bearer k9z"}`, "header Authorization"},
		{"long env", `{X-Api-Key: "${LONG}"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decl := "- namespace: Svc\n  method: charge\n  url: http://127.0.0.1/x\n  headers: " + tt.headers + "\n"
			_, err := httptool.Load(write(t, "t.yaml", decl), short)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want it loaded", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "shorter than 8") {
				t.Fatalf("got %v, want an error naming %s and the bound", err, tt.want)
			}
			if strings.Contains(err.Error(), "k9z") {
				t.Errorf("error %q holds the secret", err)
			}
		})
	}
}
