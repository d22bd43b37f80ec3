package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// quickstartBlocks returns the commands of the first sh block of docs/quickstart.md
// and the lines of its text blocks (the output it shows).
func quickstartBlocks(t *testing.T) (commands, shown []string) {
	t.Helper()
	f, err := os.Open("../../docs/quickstart.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block, seenSh := "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case block == "" && strings.HasPrefix(line, "```"):
			block = strings.TrimPrefix(line, "```")
		case block != "" && line == "```":
			if block == "sh" {
				seenSh = true
			}
			block = ""
		case block == "sh" && !seenSh:
			if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
				commands = append(commands, s)
			}
		case block == "text":
			shown = append(shown, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return commands, shown
}

// TestQuickstart follows docs/quickstart.md literally: its commands run one by one in
// a shell, the go install into a private bin directory put first on PATH, the rest in
// an empty directory. Every command must succeed and every output line the document
// shows must appear.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	commands, shown := quickstartBlocks(t)
	if len(commands) < 4 || !strings.HasPrefix(commands[0], "go install ") {
		t.Fatalf("quickstart commands: got %q, want go install then scripthost commands", commands)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin, work := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "GOBIN="+bin, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var all strings.Builder
	for i, c := range commands {
		cmd := exec.Command("sh", "-c", c)
		cmd.Env = env
		cmd.Dir = work
		if i == 0 {
			cmd.Dir = root
		}
		out, err := cmd.CombinedOutput()
		all.Write(out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
	}
	for _, line := range shown {
		if !strings.Contains(all.String(), line) {
			t.Errorf("the quickstart shows %q, the commands did not print it:\n%s", line, all.String())
		}
	}
}

// TestReadmeQuickstartIsTheTestedOne keeps the README's quick start what it says: it
// opens with make run and make test, and its commands for a workflow of your own are
// those of docs/quickstart.md, which TestQuickstart runs literally.
func TestReadmeQuickstartIsTheTestedOne(t *testing.T) {
	doc, _ := quickstartBlocks(t)
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Quick start")
	if !ok {
		t.Fatal("README.md has no Quick start section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := shBlocks(section)
	if len(blocks) < 2 {
		t.Fatalf("README.md's Quick start has %d sh blocks, want the make targets and the commands of docs/quickstart.md", len(blocks))
	}
	if got, want := strings.Join(blocks[0], "\n"), "make run\nmake test"; got != want {
		t.Errorf("README quick start opens with:\n%s\nwant:\n%s", got, want)
	}
	if got, want := strings.Join(blocks[1], "\n"), strings.Join(doc, "\n"); got != want {
		t.Errorf("README quick start:\n%s\nwant the commands of docs/quickstart.md:\n%s", got, want)
	}
}

// shBlocks returns the commands of each sh block of a Markdown text, without comments
// and blank lines.
func shBlocks(text string) [][]string {
	var out [][]string
	for {
		_, rest, ok := strings.Cut(text, "```sh\n")
		if !ok {
			return out
		}
		block, after, _ := strings.Cut(rest, "```")
		var cmds []string
		for _, l := range strings.Split(block, "\n") {
			if s, _, _ := strings.Cut(l, " #"); strings.TrimSpace(s) != "" && !strings.HasPrefix(strings.TrimSpace(s), "#") {
				cmds = append(cmds, strings.TrimSpace(s))
			}
		}
		out = append(out, cmds)
		text = after
	}
}
