package workspace

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/scripthost/scripthost"
)

// Limits of Search and Glob.
const (
	// MaxMatches is the most matches Search returns; Truncated tells when there were more.
	MaxMatches = 200
	// MaxGlobResults is the most paths Glob returns.
	MaxGlobResults = 1000
	// MaxLineLen is the longest line text a match carries; longer lines are cut.
	MaxLineLen = 500
)

// Match is one line that matched a search.
type Match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// SearchResult is what Search found.
type SearchResult struct {
	Matches   []Match `json:"matches"`
	Truncated bool    `json:"truncated"`
}

// Search finds lines matching the regular expression pattern (RE2 syntax, so its time
// is linear in the input) in the regular files under dir ("" for the whole workspace)
// whose workspace-relative path matches glob (when given; see Glob for its syntax).
// Binary files, files over MaxReadBytes and .git directories are skipped.
func (w *Workspace) Search(op, pattern, dir, glob string) (SearchResult, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return SearchResult{}, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: fmt.Sprintf("pattern: %v", err)}
	}
	if glob != "" {
		if err := checkGlob(glob); err != nil {
			return SearchResult{}, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: err.Error()}
		}
	}
	start, err := w.Clean(op, dir)
	if err != nil {
		return SearchResult{}, err
	}
	res := SearchResult{Matches: []Match{}}
	fsys := w.root.FS()
	err = fs.WalkDir(fsys, start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return err
			}
			return nil // unreadable or escaping entries are skipped
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != start {
				return fs.SkipDir
			}
			return nil
		}
		if glob != "" && !MatchGlob(glob, p) {
			return nil
		}
		info, err := fs.Stat(fsys, p)
		if err != nil || !info.Mode().IsRegular() || info.Size() > MaxReadBytes {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil || isBinary(data) {
			return nil
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), MaxReadBytes)
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			if !re.Match(line) {
				continue
			}
			if len(res.Matches) == MaxMatches {
				res.Truncated = true
				return fs.SkipAll
			}
			text := string(line)
			if len(text) > MaxLineLen {
				text = text[:MaxLineLen]
			}
			res.Matches = append(res.Matches, Match{Path: p, Line: n, Text: text})
		}
		return nil
	})
	if err != nil {
		return SearchResult{}, classify(op, dir, err)
	}
	return res, nil
}

func isBinary(data []byte) bool {
	head := data
	if len(head) > 8000 {
		head = head[:8000]
	}
	return bytes.IndexByte(head, 0) >= 0
}

// Glob returns the workspace-relative paths of files and directories matching pattern,
// in lexical order, at most MaxGlobResults of them. The pattern is slash-separated and
// relative; each segment uses path.Match syntax (*, ?, [...]) and a segment "**"
// matches any number of directories, so "**/*.go" finds Go files at any depth. The
// pattern is confined like any path: no absolute patterns and no "..".
func (w *Workspace) Glob(op, pattern string) ([]string, bool, error) {
	if pattern == "" {
		return nil, false, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: "empty pattern"}
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, false, Violation(op, pattern, "absolute paths are not allowed")
	}
	for _, seg := range strings.Split(pattern, "/") {
		if seg == ".." {
			return nil, false, Violation(op, pattern, `".." is not allowed`)
		}
	}
	if err := checkGlob(pattern); err != nil {
		return nil, false, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: err.Error()}
	}
	out := []string{}
	truncated := false
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if MatchGlob(pattern, p) {
			if len(out) == MaxGlobResults {
				truncated = true
				return fs.SkipAll
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, false, classify(op, pattern, err)
	}
	return out, truncated, nil
}

func checkGlob(pattern string) error {
	for _, seg := range strings.Split(pattern, "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("glob %q: %w", pattern, err)
		}
	}
	return nil
}

// MatchGlob reports whether the slash-separated path p matches pattern (see Glob).
func MatchGlob(pattern, p string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(p, "/"))
}

func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
