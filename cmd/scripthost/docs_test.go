package main

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/scripthost/scripthost/agent"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/scripthost/scripthost/fixture"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/plan"
)

// codeBlock is one fenced block of a Markdown file.
type codeBlock struct {
	file, lang, text string
	line             int
}

// docBlocks returns the fenced code blocks of README.md and docs/*.md.
func docBlocks(t *testing.T) []codeBlock {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []codeBlock
	for _, path := range append([]string{"../../README.md"}, files...) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		var cur *codeBlock
		n := 0
		for sc.Scan() {
			n++
			line := sc.Text()
			switch {
			case cur == nil && strings.HasPrefix(line, "```"):
				cur = &codeBlock{file: strings.TrimPrefix(path, "../../"), lang: strings.TrimPrefix(line, "```"), line: n + 1}
			case cur != nil && line == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.text += line + "\n"
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestDocsCodeBlocks validates every workflow, tools file, plan and fixture shown in
// README.md and docs/, so the documentation cannot drift from what the code accepts.
// Blocks of other kinds (shell, output, Go, fragments) are left to the tests that run
// them.
func TestDocsCodeBlocks(t *testing.T) {
	counts := map[string]int{}
	for _, b := range docBlocks(t) {
		where := b.file + ":" + strconv.Itoa(b.line)
		var top map[string]any
		switch b.lang {
		case "yaml":
			_ = yaml.Unmarshal([]byte(b.text), &top)
		case "json":
			_ = json.Unmarshal([]byte(b.text), &top)
		}
		switch {
		case (b.lang == "js" || b.lang == "ts") && strings.Contains(b.text, "export default"):
			counts["workflow"]++
			path := filepath.Join(t.TempDir(), "workflow."+b.lang)
			putFile(t, path, b.text)
			if _, err := validateOnly(context.Background(), path, []byte(b.text)); err != nil {
				t.Errorf("%s: the workflow does not validate: %v", where, err)
			}
			if _, err := exec.LookPath("tsc"); err == nil && b.lang == "ts" {
				if err := typeCheck(context.Background(), path, []byte(b.text), ""); err != nil {
					t.Errorf("%s: the workflow does not type-check: %v", where, err)
				}
			}
		case top["tools"] != nil:
			counts["tools"]++
			path := filepath.Join(t.TempDir(), "tools."+b.lang)
			putFile(t, path, b.text)
			anyEnv := func(string) (string, bool) { return "docs-example-secret", true }
			if _, err := httptool.Load(path, anyEnv); err != nil {
				t.Errorf("%s: the tools file does not load: %v", where, err)
			}
		case top["goal"] != nil:
			counts["agent task"]++
			if _, err := agent.ParseTask("doc."+b.lang, []byte(b.text)); err != nil {
				t.Errorf("%s: the agent task does not parse: %v", where, err)
			}
		case top["steps"] != nil:
			counts["plan"]++
			if _, err := plan.Parse([]byte(b.text)); err != nil {
				t.Errorf("%s: the plan does not parse: %v", where, err)
			}
		case top["responses"] != nil || top["expect"] != nil:
			counts["fixture"]++
			if _, err := fixture.Parse("doc."+b.lang, []byte(b.text)); err != nil {
				t.Errorf("%s: the fixture does not parse: %v", where, err)
			}
		}
	}
	for _, kind := range []string{"workflow", "tools", "plan", "fixture", "agent task"} {
		if counts[kind] == 0 {
			t.Errorf("found no %s block in the docs: has the extraction broken?", kind)
		}
	}
	t.Logf("validated %v", counts)
}

// TestReadmeEmbeddingIsTheExample keeps the README's embedding example equal to
// host/example_test.go, which go test compiles and runs.
func TestReadmeEmbeddingIsTheExample(t *testing.T) {
	ex, err := os.ReadFile("../../host/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := strings.Cut(string(ex), "\n\n")
	for _, b := range docBlocks(t) {
		if b.file == "README.md" && b.lang == "go" && strings.Contains(b.text, "host.New(") {
			if b.text != want {
				t.Errorf("README.md:%d: the embedding example differs from host/example_test.go", b.line)
			}
			return
		}
	}
	t.Error("README.md has no embedding example")
}
