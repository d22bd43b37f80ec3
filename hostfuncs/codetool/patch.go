package codetool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/codegraph"
	"github.com/scripthost/scripthost/hostfuncs"
)

// Patch is one splice: replace the definition Symbol in File with the contents of the
// workspace file With, or with Content when With is empty.
type Patch struct {
	File    string `json:"file"`
	Symbol  string `json:"symbol"`
	With    string `json:"with,omitempty"`
	Content string `json:"content,omitempty"`
}

// Spliced is what one applied patch did.
type Spliced struct {
	File   string `json:"file"`
	Symbol string `json:"symbol"`
	Kind   string `json:"kind"`
	// Replaced is the span the definition had before the patch.
	Replaced codegraph.Span `json:"replaced"`
	// SHA256 is the hash of the file after the patch.
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// replacement returns the text a patch puts in place of the definition.
func (t *Tools) replacement(op string, p Patch) ([]byte, error) {
	switch {
	case p.File == "" || p.Symbol == "":
		return nil, logicErr(op, scripthost.CodeInvalidInput, "a patch needs a file and a symbol")
	case (p.With == "") == (p.Content == ""):
		return nil, logicErr(op, scripthost.CodeInvalidInput, "patch of %s in %s: give exactly one of with (a file) and content", p.Symbol, p.File)
	case p.With != "":
		return t.cfg.Workspace.Read(op, p.With)
	}
	return []byte(p.Content), nil
}

// staged is the new content of one file, with what it replaced.
type staged struct {
	path     string
	old, new []byte
	done     []Spliced
}

// stage applies patches in memory, in order, several to one file in sequence. Nothing
// is written; any refused patch refuses them all.
func (t *Tools) stage(ctx context.Context, op string, patches []Patch) ([]*staged, error) {
	var files []*staged
	byPath := map[string]*staged{}
	for i, p := range patches {
		where := ""
		if len(patches) > 1 {
			where = fmt.Sprintf("patch %d: ", i+1)
		}
		with, err := t.replacement(op, p)
		if err != nil {
			return nil, prefix(where, err)
		}
		clean, err := t.source(op, p.File)
		if err != nil {
			return nil, prefix(where, err)
		}
		f := byPath[clean]
		if f == nil {
			src, err := t.cfg.Workspace.Read(op, clean)
			if err != nil {
				return nil, prefix(where, err)
			}
			f = &staged{path: clean, old: src, new: src}
			byPath[clean] = f
			files = append(files, f)
		}
		out, sym, err := Splice(ctx, op, clean, f.new, p.Symbol, with)
		if err != nil {
			return nil, prefix(where, err)
		}
		f.new = out
		f.done = append(f.done, Spliced{File: clean, Symbol: p.Symbol, Kind: sym.Kind, Replaced: sym.Span})
	}
	return files, nil
}

// commit writes the staged files, each atomically. When a write fails, the files
// already written get their old content back, so the tree is as it was.
func (t *Tools) commit(ctx context.Context, op string, files []*staged) ([]Spliced, error) {
	var out []Spliced
	for i, f := range files {
		if err := t.cfg.Workspace.Write(op, f.path, f.new); err != nil {
			for _, w := range files[:i] {
				_ = t.cfg.Workspace.Write(op, w.path, w.old)
			}
			return nil, err
		}
		for _, d := range f.done {
			d.SHA256, d.Bytes = hashOf(f.new), len(f.new)
			out = append(out, d)
		}
	}
	t.mu.Lock()
	g := t.g
	t.mu.Unlock()
	if g != nil {
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = f.path
		}
		// The patch is made; a stale index is refreshed by the next query anyway.
		_, _ = g.Refresh(ctx, paths...)
	}
	return out, nil
}

// apply stages and commits patches as one: no other patch of these tools runs between
// reading the files and writing them.
func (t *Tools) apply(ctx context.Context, op string, patches []Patch) ([]Spliced, error) {
	t.patch.Lock()
	defer t.patch.Unlock()
	files, err := t.stage(ctx, op, patches)
	if err != nil {
		return nil, err
	}
	return t.commit(ctx, op, files)
}

func prefix(where string, err error) error {
	if where == "" {
		return err
	}
	if se, ok := err.(*scripthost.Error); ok {
		c := *se
		c.Message = where + c.Message
		return &c
	}
	return fmt.Errorf("%s%w", where, err)
}

func (t *Tools) spliceTool() *hostfuncs.Tool {
	tool := &hostfuncs.Tool{
		Namespace: PlanNamespace, Method: "splice_patch",
		Description: "Replace the whole definition of one symbol (a name or Type.name that must name exactly one definition) in a source file with the contents of the file `with` (or `content`); refused when the result does not parse. The file is replaced atomically.",
		InputSchema: schema(map[string]string{"file": str, "symbol": str, "with": str, "content": `{"type":"string"}`}, "file", "symbol"),
	}
	tool.Execute = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var p Patch
		if err := decode(tool.Name(), input, &p); err != nil {
			return nil, err
		}
		done, err := t.apply(ctx, tool.Name(), []Patch{p})
		if err != nil {
			return nil, err
		}
		return encode(done[0])
	}
	tool.Reconcile = func(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
		var p Patch
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		return t.reconcile(ctx, tool.Name(), []Patch{p}, func(d []Spliced) any { return d[0] })
	}
	return tool
}

// PlanFile is the JSON document splice_plan reads: patches applied all or nothing.
type PlanFile struct {
	Patches []Patch `json:"patches"`
}

func (t *Tools) readPlanFile(op, p string) ([]Patch, error) {
	raw, err := t.cfg.Workspace.Read(op, p)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var pf PlanFile
	if err := dec.Decode(&pf); err != nil {
		return nil, logicErr(op, scripthost.CodeInvalidInput, "%s: want {\"patches\": [{\"file\", \"symbol\", \"with\" or \"content\"}, …]}: %v", p, err)
	}
	if len(pf.Patches) == 0 {
		return nil, logicErr(op, scripthost.CodeInvalidInput, "%s lists no patches", p)
	}
	return pf.Patches, nil
}

func (t *Tools) splicePlanTool() *hostfuncs.Tool {
	tool := &hostfuncs.Tool{
		Namespace: PlanNamespace, Method: "splice_plan",
		Description: `Apply the splices a JSON file lists ({"patches": [{"file", "symbol", "with" or "content"}]}) all or nothing: when one is refused, no file changes.`,
		InputSchema: schema(map[string]string{"plan_file": str}, "plan_file"),
	}
	tool.Execute = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			PlanFile string `json:"plan_file"`
		}
		if err := decode(tool.Name(), input, &in); err != nil {
			return nil, err
		}
		patches, err := t.readPlanFile(tool.Name(), in.PlanFile)
		if err != nil {
			return nil, err
		}
		done, err := t.apply(ctx, tool.Name(), patches)
		if err != nil {
			return nil, err
		}
		return encode(map[string]any{"patches": done})
	}
	tool.Reconcile = func(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
		var in struct {
			PlanFile string `json:"plan_file"`
		}
		if err := json.Unmarshal(m.Params, &in); err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		patches, err := t.readPlanFile(tool.Name(), in.PlanFile)
		if err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		return t.reconcile(ctx, tool.Name(), patches, func(d []Spliced) any { return map[string]any{"patches": d} })
	}
	return tool
}

// reconcile decides patches whose outcome was lost by content: a patch was applied
// when its file now holds the replacement text (leading and trailing white space
// aside; a doc comment in the replacement lies outside the definition's span, so the
// text is looked for in the whole file). Files are written atomically, so all applied
// means the call succeeded and none applied that it did not.
func (t *Tools) reconcile(ctx context.Context, op string, patches []Patch, result func([]Spliced) any) (scripthost.Reconciliation, error) {
	applied := 0
	var done []Spliced
	for _, p := range patches {
		if strings.Contains(p.Content, hostfuncs.Redacted) {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "the redacted content cannot be compared with the file"}, nil
		}
		with, err := t.replacement(op, p)
		if err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		src, err := t.cfg.Workspace.Read(op, p.File)
		if err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		if !bytes.Contains(src, bytes.TrimSpace(with)) {
			continue
		}
		applied++
		d := Spliced{File: p.File, Symbol: p.Symbol, SHA256: hashOf(src), Bytes: len(src)}
		if l, ok := codegraph.LanguageOf(p.File); ok {
			if parsed, err := codegraph.Parse(ctx, l, p.File, src); err == nil {
				if s, err := resolve(op, p.File, parsed.Symbols, p.Symbol); err == nil {
					d.Kind, d.Replaced = s.Kind, s.Span
				}
			}
		}
		done = append(done, d)
	}
	switch applied {
	case len(patches):
		res, err := encode(result(done))
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: res}, err
	case 0:
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "no file holds the replacement"}, nil
	}
	return scripthost.Reconciliation{Outcome: scripthost.ReconcileIndeterminate,
		Reason: fmt.Sprintf("%d of %d patches are in place: the files changed since", applied, len(patches))}, nil
}
