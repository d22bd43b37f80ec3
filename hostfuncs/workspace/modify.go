package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// Edit replaces the one occurrence of Search with Replace.
type Edit struct {
	Search  string `json:"search"`
	Replace string `json:"replace"`
}

// ModifyInput is the input of Files.modify: exact search/replace edits, or a unified
// diff, applied to the file's current text.
type ModifyInput struct {
	Path  string `json:"path"`
	Edits []Edit `json:"edits,omitempty"`
	Diff  string `json:"diff,omitempty"`
}

// ApplyEdits applies edits in order. Each Search must occur exactly once in the text
// as the earlier edits left it; otherwise nothing is applied and the error says which
// edit does not match and why.
func ApplyEdits(text string, edits []Edit) (string, error) {
	for i, e := range edits {
		if e.Search == "" {
			return "", fmt.Errorf("edit %d: search text is empty", i+1)
		}
		switch n := strings.Count(text, e.Search); n {
		case 1:
			text = strings.Replace(text, e.Search, e.Replace, 1)
		case 0:
			return "", fmt.Errorf("edit %d: search text not found in the file", i+1)
		default:
			return "", fmt.Errorf("edit %d: search text occurs %d times; give more context so it occurs once", i+1, n)
		}
	}
	return text, nil
}

// ApplyDiff applies a unified diff (the hunks of one file; ---/+++ headers optional)
// to text. Every context and removed line must match the text at the hunk's position
// exactly; otherwise nothing is applied and the error names the hunk and line.
func ApplyDiff(text, diff string) (string, error) {
	return applyDiff(text, diff, false)
}

func applyDiff(text, diff string, reverse bool) (string, error) {
	hasNL := strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	var out []string
	pos := 0 // next unconsumed line of lines
	hunks := 0
	dl := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	for i := 0; i < len(dl); i++ {
		l := dl[i]
		if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "index ") {
			continue
		}
		if !strings.HasPrefix(l, "@@") {
			return "", fmt.Errorf("diff line %d: expected a hunk header (@@ -a,b +c,d @@), got %q", i+1, l)
		}
		hunks++
		start, err := hunkStart(l, reverse)
		if err != nil {
			return "", fmt.Errorf("diff line %d: %w", i+1, err)
		}
		if start > 0 {
			start-- // 1-based; 0 means an empty file
		}
		if start < pos || start > len(lines) {
			return "", fmt.Errorf("hunk %d: starts at line %d, outside the file or before the previous hunk", hunks, start+1)
		}
		out = append(out, lines[pos:start]...)
		pos = start
		for i+1 < len(dl) && !strings.HasPrefix(dl[i+1], "@@") {
			i++
			h := dl[i]
			if h == `\ No newline at end of file` {
				continue
			}
			op, body := byte(' '), ""
			if h != "" {
				op, body = h[0], h[1:]
			}
			if reverse && op == '+' {
				op = '-'
			} else if reverse && op == '-' {
				op = '+'
			}
			switch op {
			case ' ', '-':
				if pos >= len(lines) || lines[pos] != body {
					got := "end of file"
					if pos < len(lines) {
						got = strconv.Quote(lines[pos])
					}
					return "", fmt.Errorf("hunk %d: file line %d does not match the diff: want %q, the file has %s", hunks, pos+1, body, got)
				}
				if op == ' ' {
					out = append(out, body)
				}
				pos++
			case '+':
				out = append(out, body)
			default:
				return "", fmt.Errorf("diff line %d: a hunk line starts with ' ', '-' or '+', got %q", i+1, h)
			}
		}
	}
	if hunks == 0 {
		return "", fmt.Errorf("the diff has no hunks")
	}
	out = append(out, lines[pos:]...)
	res := strings.Join(out, "\n")
	if len(out) > 0 && (hasNL || text == "") {
		res += "\n"
	}
	return res, nil
}

// hunkStart reads the old (or, reversed, the new) start line of a hunk header.
func hunkStart(h string, reverse bool) (int, error) {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, fmt.Errorf("malformed hunk header %q", h)
	}
	r := f[1][1:]
	if reverse {
		r = f[2][1:]
	}
	n, err := strconv.Atoi(strings.SplitN(r, ",", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("malformed hunk header %q", h)
	}
	return n, nil
}

// modified applies in's edits or diff to text.
func modified(text string, in ModifyInput) (string, error) {
	switch {
	case in.Diff != "" && len(in.Edits) > 0:
		return "", fmt.Errorf("give edits or a diff, not both")
	case in.Diff != "":
		return ApplyDiff(text, in.Diff)
	case len(in.Edits) > 0:
		return ApplyEdits(text, in.Edits)
	}
	return "", fmt.Errorf("give edits or a diff")
}

// reverted undoes in on text: the text before the change, if text holds the change.
func reverted(text string, in ModifyInput) (string, error) {
	if in.Diff != "" {
		return applyDiff(text, in.Diff, true)
	}
	rev := make([]Edit, len(in.Edits))
	for i, e := range in.Edits {
		rev[len(in.Edits)-1-i] = Edit{Search: e.Replace, Replace: e.Search}
	}
	for _, e := range rev {
		if e.Search == "" {
			return "", fmt.Errorf("an edit removed its text: cannot tell")
		}
	}
	return ApplyEdits(text, rev)
}

func (w *Workspace) modifyTool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: FilesNamespace, Method: "modify",
		Description: "Change a text file of the workspace with exact search/replace edits (each search text must occur exactly once) " +
			"or a unified diff; refuses, leaving the file untouched, when the file's text does not match.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1},` +
			`"edits":{"type":"array","minItems":1,"items":{"type":"object","properties":{"search":{"type":"string","minLength":1},"replace":{"type":"string"}},"required":["search","replace"],"additionalProperties":false}},` +
			`"diff":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`),
		OutputSchema: schema(map[string]string{"path": str, "bytes": `{"type":"integer"}`}, "path", "bytes"),
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in ModifyInput
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		old, err := w.Read(t.Name(), in.Path)
		if err != nil {
			return nil, err
		}
		next, err := modified(string(old), in)
		if err != nil {
			return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: t.Name(),
				Message: fmt.Sprintf("%s: %v; the file is unchanged", in.Path, err)}
		}
		if err := w.Write(t.Name(), in.Path, []byte(next)); err != nil {
			return nil, err
		}
		return encode(writeOut{Path: in.Path, Bytes: len(next)})
	}
	// A modification whose outcome was lost is decided by the file: if undoing it
	// applies cleanly the change is there; if doing it applies cleanly it is not.
	t.Reconcile = func(_ context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
		var in ModifyInput
		if err := json.Unmarshal(m.Params, &in); err != nil || strings.Contains(string(m.Params), hostfuncs.Redacted) {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "params cannot be compared with the file"}, nil
		}
		cur, err := w.Read(m.Tool(), in.Path)
		if err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		_, undoErr := reverted(string(cur), in)
		_, doErr := modified(string(cur), in)
		switch {
		case undoErr == nil && doErr != nil:
			res, err := encode(writeOut{Path: in.Path, Bytes: len(cur)})
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: res}, err
		case doErr == nil && undoErr != nil:
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "the file does not hold the change"}, nil
		}
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileIndeterminate, Reason: "the file matches both before and after the change"}, nil
	}
	return t
}
