package main

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/scripthost/scripthost/agent"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

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
			path := filepath.Join(t.TempDir(), "workflow."+b.lang)
			putFile(t, path, b.text)
			if repo := repositoryCopy(t, b.text); repo != "" {
				// A workflow shown as it is in the repository is validated where it
				// is, so that the modules it imports resolve.
				if !packagesInstalled(repo) {
					t.Logf("%s: %s is validated by make digest (its npm packages are not installed here)", where, repo)
					continue
				}
				path = repo
			}
			counts["workflow"]++
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

// repositoryCopy returns the path of the example workflow under scripts/ whose text is
// text, or "".
func repositoryCopy(t *testing.T, text string) string {
	t.Helper()
	paths, err := filepath.Glob("../../scripts/*/workflow.*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && string(b) == text {
			return p
		}
	}
	return ""
}

// packagesInstalled reports whether the npm packages a workflow's package.json names
// are installed beside it (it names none, or its node_modules holds each).
func packagesInstalled(workflow string) bool {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(workflow), "package.json"))
	if err != nil {
		return true
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if json.Unmarshal(data, &pkg) != nil {
		return false
	}
	for name := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join(filepath.Dir(workflow), "node_modules", name, "package.json")); err != nil {
			return false
		}
	}
	return true
}

// TestEmbeddingDocIsTheExample keeps the embedding example of docs/embedding.md equal
// to host/example_test.go, which go test compiles and runs.
func TestEmbeddingDocIsTheExample(t *testing.T) {
	ex, err := os.ReadFile("../../host/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := strings.Cut(string(ex), "\n\n")
	for _, b := range docBlocks(t) {
		if b.file == "docs/embedding.md" && b.lang == "go" && strings.Contains(b.text, "host.New(") {
			if b.text != want {
				t.Errorf("docs/embedding.md:%d: the embedding example differs from host/example_test.go", b.line)
			}
			return
		}
	}
	t.Error("docs/embedding.md has no embedding example")
}

// TestReadmeDigestIsTheExample keeps the README's example of a workflow of several files
// the one in scripts/digest, which make digest validates, tests against its fixtures and
// runs: each file the README shows is that file, byte for byte.
func TestReadmeDigestIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"workflow.ts", "src/render.ts"} {
		src, err := os.ReadFile(filepath.Join("../../scripts/digest", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "```ts\n"+string(src)+"```\n") {
			t.Errorf("README.md does not show scripts/digest/%s as it is", f)
		}
	}
}

// mdLink is a Markdown link or image target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks checks every relative link of README.md and docs/*.md, outside code
// blocks: the file or directory it names exists, and an anchor names a heading of the
// Markdown file it points into (as GitHub makes anchors of headings).
func TestDocsLinks(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"../../README.md"}, files...)
	anchors := map[string]map[string]bool{}
	headingsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		for _, line := range proseLines(string(data)) {
			if h := strings.TrimLeft(line.text, "#"); h != line.text && strings.HasPrefix(h, " ") {
				slug := headingAnchor(h)
				for n := 1; a[slug]; n++ {
					slug = headingAnchor(h) + "-" + strconv.Itoa(n)
				}
				a[slug] = true
			}
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range proseLines(string(data)) {
			for _, m := range mdLink.FindAllStringSubmatch(line.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := strings.TrimPrefix(file, "../../") + ":" + strconv.Itoa(line.n)
				path, anchor, _ := strings.Cut(target, "#")
				full := file
				if path != "" {
					full = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(full); err != nil {
						t.Errorf("%s: link %s: no such file", where, target)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(full, ".md") && !headingsOf(full)[anchor] {
					t.Errorf("%s: link %s: %s has no heading with anchor #%s", where, target, strings.TrimPrefix(full, "../../"), anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d links: has the extraction broken?", checked)
	}
	t.Logf("checked %d links", checked)
}

// numberedLine is a line of a file and its number.
type numberedLine struct {
	text string
	n    int
}

// proseLines returns the lines of a Markdown text outside fenced code blocks.
func proseLines(text string) []numberedLine {
	var out []numberedLine
	inCode := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			out = append(out, numberedLine{line, i + 1})
		}
	}
	return out
}

// headingAnchor is the anchor GitHub gives a heading: lower case, letters, digits,
// hyphens and underscores kept, spaces made hyphens, everything else dropped.
func headingAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
