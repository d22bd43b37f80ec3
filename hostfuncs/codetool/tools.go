// Package codetool owns the code tools: symbol and reference queries over the
// workspace's code index (codegraph), span-safe patches of one definition
// (splice_patch, splice_plan) and the project's checker with structured diagnostics
// (lsp_check). Plans and agents call them by their bare names in the "plan" namespace;
// workflows get the read-only queries as Code.symbols, Code.references and
// Code.referencesFrom.
package codetool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/codegraph"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
)

// Namespaces of the code tools.
const (
	PlanNamespace = workspace.PlanNamespace
	CodeNamespace = "Code"
)

// DefaultCheckTimeout bounds one checker run.
const DefaultCheckTimeout = 5 * time.Minute

// Config configures the code tools.
type Config struct {
	// Workspace confines every path. Required.
	Workspace *workspace.Workspace
	// Index is the code graph's database file; "" means codegraph.db in the
	// workspace root.
	Index string
	// CheckTimeout bounds one lsp_check run; 0 means DefaultCheckTimeout.
	CheckTimeout time.Duration
	// LookPath finds a checker program; nil means exec.LookPath. Tests use it to
	// hide a checker.
	LookPath func(string) (string, error)
}

// Tools serves the code tools of one workspace. It is safe for concurrent use.
type Tools struct {
	cfg Config
	// patch serializes patches from reading the files to writing them, so that two
	// patches of one file cannot lose each other's change.
	patch sync.Mutex
	mu    sync.Mutex // guards g
	g     *codegraph.Graph
}

// New returns the code tools of cfg.Workspace. The index is opened on first use.
func New(cfg Config) (*Tools, error) {
	if cfg.Workspace == nil {
		return nil, fmt.Errorf("codetool: a workspace is required")
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = DefaultCheckTimeout
	}
	if cfg.LookPath == nil {
		cfg.LookPath = exec.LookPath
	}
	return &Tools{cfg: cfg}, nil
}

// Close closes the index when it was opened.
func (t *Tools) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.g == nil {
		return nil
	}
	err := t.g.Close()
	t.g = nil
	return err
}

// graph opens the index on first use.
func (t *Tools) graph(ctx context.Context) (*codegraph.Graph, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.g != nil {
		return t.g, nil
	}
	g, err := codegraph.Open(ctx, t.cfg.Workspace.Dir(), t.cfg.Index)
	if err != nil {
		return nil, err
	}
	t.g = g
	return g, nil
}

// PlanTools returns the tools plans and agents call: symbols_in_file,
// references_to_symbol_name, references_from_file_to_symbol_name, splice_patch,
// splice_plan and lsp_check.
func (t *Tools) PlanTools() []*hostfuncs.Tool {
	return []*hostfuncs.Tool{
		t.symbolsTool(PlanNamespace, "symbols_in_file"),
		t.refsToTool(PlanNamespace, "references_to_symbol_name"),
		t.refsFromTool(PlanNamespace, "references_from_file_to_symbol_name"),
		t.spliceTool(), t.splicePlanTool(), t.checkTool(),
	}
}

// WorkflowTools returns the read-only queries for workflows: Code.symbols,
// Code.references and Code.referencesFrom.
func (t *Tools) WorkflowTools() []*hostfuncs.Tool {
	return []*hostfuncs.Tool{
		t.symbolsTool(CodeNamespace, "symbols"),
		t.refsToTool(CodeNamespace, "references"),
		t.refsFromTool(CodeNamespace, "referencesFrom"),
	}
}

var schema = hostfuncs.ObjectSchema

const str = `{"type":"string","minLength":1}`

// Output schemas, so that generated declarations type the rows.
const (
	spanProps = `"path":{"type":"string"},"name":{"type":"string"},"start_byte":{"type":"integer"},"end_byte":{"type":"integer"},` +
		`"start_line":{"type":"integer"},"start_column":{"type":"integer"},"end_line":{"type":"integer"},"end_column":{"type":"integer"}`
	spanRequired = `"path","name","start_byte","end_byte","start_line","start_column","end_line","end_column"`
	symbolRow    = `{"type":"object","required":[` + spanRequired + `,"kind"],"properties":{` + spanProps + `,"kind":{"type":"string"},"container":{"type":"string"}}}`
	refRow       = `{"type":"object","required":[` + spanRequired + `],"properties":{` + spanProps + `}}`
	symbolsOut   = `{"type":"object","required":["path","symbols"],"properties":{"path":{"type":"string"},"symbols":{"type":"array","items":` + symbolRow + `}}}`
	refsToOut    = `{"type":"object","required":["name","references"],"properties":{"name":{"type":"string"},"references":{"type":"array","items":` + refRow + `}}}`
	refsFromOut  = `{"type":"object","required":["path","name","references"],"properties":{"path":{"type":"string"},"name":{"type":"string"},"references":{"type":"array","items":` + refRow + `}}}`
)

var decode = hostfuncs.DecodeInput

func encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("codetool: encode result: %w", err)
	}
	return b, nil
}

// source checks that p is inside the workspace and a language the index reads, and
// returns it cleaned.
func (t *Tools) source(op, p string) (string, error) {
	clean, err := t.cfg.Workspace.Clean(op, p)
	if err != nil {
		return "", err
	}
	if _, ok := codegraph.LanguageOf(clean); !ok {
		return "", logicErr(op, CodeUnsupportedFile, "%s: not a Go, Rust, JavaScript, TypeScript or Python file", p)
	}
	return clean, nil
}

// internal wraps an index failure: not a definite answer about the caller's input. The
// index names files by their place on the host, which a plan or a model is not told:
// the message names them relative to the workspace, and the cause, whose text is the
// index's own, is left out.
func (t *Tools) internal(op string, err error) error {
	return &scripthost.Error{Class: scripthost.ClassInternal, Code: "index_failed", Op: op, Message: t.hidePaths(err.Error())}
}

// hidePaths rewrites the workspace's host path in s as the workspace-relative one
// ("/srv/ws/sub/a.go" becomes "sub/a.go", "/srv/ws" becomes ".").
func (t *Tools) hidePaths(s string) string {
	return hideDir(s, t.cfg.Workspace.Dir())
}

func hideDir(s, dir string) string {
	if dir == "" || dir == string(filepath.Separator) {
		return s
	}
	s = strings.ReplaceAll(s, dir+string(filepath.Separator), "")
	return strings.ReplaceAll(s, dir, ".")
}

func (t *Tools) symbolsTool(ns, method string) *hostfuncs.Tool {
	tool := &hostfuncs.Tool{
		Namespace: ns, Method: method,
		Description:  "List the symbols (functions, methods, types, classes, constants) a source file defines, with their spans.",
		InputSchema:  schema(map[string]string{"path": str}, "path"),
		OutputSchema: json.RawMessage(symbolsOut),
		ReadOnly:     hostfuncs.ReadOnlyAlways,
	}
	tool.Execute = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Path string `json:"path"`
		}
		if err := decode(tool.Name(), input, &in); err != nil {
			return nil, err
		}
		p, err := t.source(tool.Name(), in.Path)
		if err != nil {
			return nil, err
		}
		if ok, dir, err := t.cfg.Workspace.Exists(tool.Name(), p); err != nil {
			return nil, err
		} else if !ok {
			return nil, logicErr(tool.Name(), workspace.CodeNotFound, "%s does not exist", in.Path)
		} else if dir {
			return nil, logicErr(tool.Name(), workspace.CodeNotFile, "%s is a directory", in.Path)
		}
		g, err := t.graph(ctx)
		if err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		if _, err := g.Refresh(ctx, p); err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		syms, err := g.Symbols(ctx, p)
		if err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		return encode(map[string]any{"path": p, "symbols": syms})
	}
	return tool
}

func (t *Tools) refsToTool(ns, method string) *hostfuncs.Tool {
	tool := &hostfuncs.Tool{
		Namespace: ns, Method: method,
		Description:  "List every reference to a name in the workspace's source files, with spans; the index is brought up to date first.",
		InputSchema:  schema(map[string]string{"name": str}, "name"),
		OutputSchema: json.RawMessage(refsToOut),
		ReadOnly:     hostfuncs.ReadOnlyAlways,
	}
	tool.Execute = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Name string `json:"name"`
		}
		if err := decode(tool.Name(), input, &in); err != nil {
			return nil, err
		}
		g, err := t.graph(ctx)
		if err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		if _, err := g.Index(ctx); err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		refs, err := g.References(ctx, in.Name)
		if err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		return encode(map[string]any{"name": in.Name, "references": refs})
	}
	return tool
}

func (t *Tools) refsFromTool(ns, method string) *hostfuncs.Tool {
	tool := &hostfuncs.Tool{
		Namespace: ns, Method: method,
		Description:  "List the references to a name in one source file, with spans.",
		InputSchema:  schema(map[string]string{"path": str, "name": str}, "path", "name"),
		OutputSchema: json.RawMessage(refsFromOut),
		ReadOnly:     hostfuncs.ReadOnlyAlways,
	}
	tool.Execute = func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Path string `json:"path"`
			Name string `json:"name"`
		}
		if err := decode(tool.Name(), input, &in); err != nil {
			return nil, err
		}
		p, err := t.source(tool.Name(), in.Path)
		if err != nil {
			return nil, err
		}
		g, err := t.graph(ctx)
		if err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		if _, err := g.Refresh(ctx, p); err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		refs, err := g.ReferencesFrom(ctx, p, in.Name)
		if err != nil {
			return nil, t.internal(tool.Name(), err)
		}
		return encode(map[string]any{"path": p, "name": in.Name, "references": refs})
	}
	return tool
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// IndexExists reports whether the index file has been built.
func (t *Tools) IndexExists() bool {
	return codegraph.Exists(t.cfg.Workspace.Dir(), t.cfg.Index)
}

// Defined reports whether symbol (a name or Type.name) is defined in file, or
// anywhere in the workspace when file is "", refreshing the index first.
func (t *Tools) Defined(ctx context.Context, file, symbol string) (bool, error) {
	const op = "symbol_exists"
	g, err := t.graph(ctx)
	if err != nil {
		return false, t.internal(op, err)
	}
	var syms []codegraph.Symbol
	if file == "" {
		if _, err := g.Index(ctx); err != nil {
			return false, t.internal(op, err)
		}
		syms, err = g.Definitions(ctx, symbol)
	} else {
		var p string
		if p, err = t.source(op, file); err != nil {
			return false, err
		}
		if _, err := g.Refresh(ctx, p); err != nil {
			return false, t.internal(op, err)
		}
		syms, err = g.DefinitionsIn(ctx, p, symbol)
	}
	if err != nil {
		return false, t.internal(op, err)
	}
	return len(syms) > 0, nil
}
