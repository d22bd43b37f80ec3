package serve

import (
	"os"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestOpenAPIDocumentsEveryRoute checks docs/openapi.yaml against the routes served:
// every route is documented with its method, and every documented path is served.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	b, err := os.ReadFile("../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
			if op["summary"] == nil || op["responses"] == nil {
				t.Errorf("%s %s: no summary or responses", method, path)
			}
		}
	}
	served := map[string]bool{"GET /metrics": true}
	for _, r := range routes(&Server{}) {
		served[r.Method+" "+r.Path] = true
	}
	var missing, extra []string
	for k := range served {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("docs/openapi.yaml: routes not documented %v; documented but not served %v", missing, extra)
	}
}
