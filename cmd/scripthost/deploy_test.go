package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
)

// deployFiles are the dashboard and alert rules the repository ships.
var deployFiles = []string{"../../deploy/grafana/scripthost.json", "../../deploy/prometheus/alerts.yaml"}

var metricName = regexp.MustCompile(`\bscripthost_[a-z_]+[a-z]`)

// TestDeployQueriesExposedMetrics runs serve through what the dashboard and the alert
// rules watch (a run that commits a mutation, one that fails and blocks its handler
// with an event left pending behind it, a mutation waiting for reconciliation) and
// checks that every scripthost_ metric they query is a series its /metrics serves. It
// also checks the rules with promtool when it is installed (required under CI=true).
func TestDeployQueriesExposedMetrics(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	svc := newEchoService(t)
	svc.status = http.StatusServiceUnavailable // the charge's outcome is unknown
	e := newHTTPEnv(t, svc.srv.URL, "tools.json", 1, "2s")
	jobs := jobWorkflow(t, t.TempDir(), map[string]string{"NEXT": "throw new Error('boom');"})
	s := startServe(t, e.db, e.wf, jobs, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken)
	waitFor(t, func() bool {
		var failed, waiting []scripthost.Run
		s.get("/api/v1/runs?handler=work&status=failed:logic", &failed)
		s.get("/api/v1/runs?status=paused:reconciliation", &waiting)
		return len(failed) == 1 && len(waiting) == 1
	})
	if code, b := s.call("POST", "/api/v1/events", testServeToken, map[string]any{
		"workflow": "jobs", "topic": "jobs", "id": "job-2", "payload": map[string]any{}, "by": "test"}); code/100 != 2 {
		t.Fatalf("publish: %d %s", code, b)
	}
	code, page := s.call("GET", "/metrics", testServeToken, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, page)
	}
	exposed := map[string]bool{}
	for line := range strings.SplitSeq(string(page), "\n") {
		if name := metricName.FindString(line); name != "" && strings.HasPrefix(line, name) {
			exposed[name] = true
		}
	}
	for _, f := range deployFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".json") {
			var dash struct {
				Panels []struct {
					Targets []struct{ Expr string } `json:"targets"`
				} `json:"panels"`
			}
			if err := json.Unmarshal(b, &dash); err != nil || len(dash.Panels) == 0 {
				t.Fatalf("%s: not a dashboard with panels: %v", f, err)
			}
		}
		var missing []string
		for _, name := range metricName.FindAllString(string(b), -1) {
			if !exposed[name] {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s queries metrics serve does not expose: %v", filepath.Base(f), slicesCompact(missing))
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed (Debian: apt-get install prometheus); CI checks the alert rules with it")
		}
		t.Log("promtool not installed: the alert rules were not checked with it")
		return
	}
	if out, err := exec.Command(promtool, "check", "rules", deployFiles[1]).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
}

func slicesCompact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
