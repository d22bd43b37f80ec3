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

// TestReadmeQuickstartIsTheTestedOne keeps the README's quick start the same commands
// as docs/quickstart.md, which TestQuickstart runs literally.
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
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("README.md's Quick start has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var readme []string
	for _, l := range strings.Split(block, "\n") {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
			readme = append(readme, s)
		}
	}
	if strings.Join(readme, "\n") != strings.Join(doc, "\n") {
		t.Errorf("README quick start:\n%s\nwant the commands of docs/quickstart.md:\n%s", strings.Join(readme, "\n"), strings.Join(doc, "\n"))
	}
}
