package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// Namespaces of the file tools. Workflows call Files.read and friends; plans call the
// plan tools by their bare method name (file_read), which the plan executor resolves in
// PlanNamespace.
const (
	FilesNamespace = "Files"
	PlanNamespace  = "plan"
)

// Tools opens the workspace rooted at root and returns its tools: Files.list,
// Files.read, Files.write, Files.modify, Files.move, Files.delete for workflows and plan.file_read,
// plan.file_write, plan.file_create, plan.file_search, plan.file_glob for plans.
func Tools(root string) ([]*hostfuncs.Tool, error) {
	w, err := New(root)
	if err != nil {
		return nil, err
	}
	return w.Tools(), nil
}

// Tools returns the file tools of w.
func (w *Workspace) Tools() []*hostfuncs.Tool {
	return []*hostfuncs.Tool{
		w.listTool(), w.readTool(FilesNamespace, "read"), w.writeTool(FilesNamespace, "write"),
		w.moveTool(), w.deleteTool(), w.modifyTool(),
		w.readTool(PlanNamespace, "file_read"), w.writeTool(PlanNamespace, "file_write"),
		w.createTool(), w.searchTool(), w.globTool(),
	}
}

var schema = hostfuncs.ObjectSchema

const (
	str     = `{"type":"string"}`
	strList = `{"type":"array","items":{"type":"string"}}`
)

var decode = hostfuncs.DecodeInput

func encode(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("workspace: encode result: %w", err)
	}
	return b, nil
}

type pathIn struct {
	Path string `json:"path"`
}

type writeIn struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

type writeOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

func (w *Workspace) listTool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: FilesNamespace, Method: "list",
		Description:  "List a directory of the workspace.",
		InputSchema:  schema(map[string]string{"dir": str}, "dir"),
		OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"object","required":["name","size","dir"],"properties":{"name":{"type":"string"},"size":{"type":"integer"},"dir":{"type":"boolean"}}}}`),
		ReadOnly:     hostfuncs.ReadOnlyAlways,
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Dir string `json:"dir"`
		}
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		entries, err := w.List(t.Name(), in.Dir)
		if err != nil {
			return nil, err
		}
		return encode(entries)
	}
	return t
}

func (w *Workspace) readTool(ns, method string) *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: ns, Method: method,
		Description:  "Read a text file of the workspace.",
		InputSchema:  schema(map[string]string{"path": str}, "path"),
		OutputSchema: schema(map[string]string{"content": str}, "content"),
		ReadOnly:     hostfuncs.ReadOnlyAlways,
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in pathIn
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		b, err := w.Read(t.Name(), in.Path)
		if err != nil {
			return nil, err
		}
		return encode(map[string]string{"content": string(b)})
	}
	return t
}

func (w *Workspace) writeTool(ns, method string) *hostfuncs.Tool {
	return w.contentTool(ns, method,
		"Write a file of the workspace atomically, creating parent directories; writing the same content again changes nothing.",
		w.Write)
}

func (w *Workspace) createTool() *hostfuncs.Tool {
	return w.contentTool(PlanNamespace, "file_create", "Create a new file of the workspace; fails if it exists.", w.Create)
}

// contentTool is a mutation that puts {path, content} into the workspace with put and
// answers {path, bytes}; a lost outcome is reconciled by looking at the file.
func (w *Workspace) contentTool(ns, method, description string, put func(op, path string, data []byte) error) *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: ns, Method: method,
		Description:  description,
		InputSchema:  schema(map[string]string{"path": str, "content": str}, "path", "content"),
		OutputSchema: schema(map[string]string{"path": str, "bytes": `{"type":"integer"}`}, "path", "bytes"),
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in writeIn
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		if err := put(t.Name(), in.Path, []byte(in.Content)); err != nil {
			return nil, err
		}
		return encode(writeOut{Path: in.Path, Bytes: len(in.Content)})
	}
	t.Reconcile = w.reconcileContent
	return t
}

// reconcileContent decides a write or create whose outcome was lost: the file holding
// exactly the content means the write happened. Writes are atomic, so any other
// content means it did not. Redacted params cannot be compared.
func (w *Workspace) reconcileContent(_ context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
	var in writeIn
	if err := json.Unmarshal(m.Params, &in); err != nil || strings.Contains(in.Content, hostfuncs.Redacted) {
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "params cannot be compared with the file"}, nil
	}
	got, err := w.Read(m.Tool(), in.Path)
	if err != nil || string(got) != in.Content {
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "the file does not hold the content"}, nil
	}
	res, err := encode(writeOut{Path: in.Path, Bytes: len(in.Content)})
	return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: res}, err
}

func (w *Workspace) moveTool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: FilesNamespace, Method: "move",
		Description: "Move or rename a file or directory of the workspace.",
		InputSchema: schema(map[string]string{"from": str, "to": str}, "from", "to"),
	}
	type moveIn struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in moveIn
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		if err := w.Move(t.Name(), in.From, in.To); err != nil {
			return nil, err
		}
		return encode(in)
	}
	t.Reconcile = func(_ context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
		var in moveIn
		if err := json.Unmarshal(m.Params, &in); err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		fromOK, _, err1 := w.Exists(m.Tool(), in.From)
		toOK, _, err2 := w.Exists(m.Tool(), in.To)
		switch {
		case err1 != nil || err2 != nil:
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "paths cannot be checked"}, nil
		case !fromOK && toOK:
			res, err := encode(in)
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: res}, err
		case fromOK && !toOK:
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "the source is still in place"}, nil
		}
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: "both or neither path exist"}, nil
	}
	return t
}

func (w *Workspace) deleteTool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: FilesNamespace, Method: "delete",
		Description: "Delete a file or an empty directory of the workspace.",
		InputSchema: schema(map[string]string{"path": str}, "path"),
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in pathIn
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		if err := w.Delete(t.Name(), in.Path); err != nil {
			return nil, err
		}
		return encode(in)
	}
	t.Reconcile = func(_ context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
		var in pathIn
		if err := json.Unmarshal(m.Params, &in); err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		exists, _, err := w.Exists(m.Tool(), in.Path)
		if err != nil {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: err.Error()}, nil
		}
		if exists {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: "the path still exists"}, nil
		}
		res, err := encode(in)
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: res}, err
	}
	return t
}

func (w *Workspace) searchTool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: PlanNamespace, Method: "file_search",
		Description: fmt.Sprintf("Find lines matching a regular expression (RE2) in workspace files, at most %d matches.", MaxMatches),
		InputSchema: schema(map[string]string{"pattern": str, "path": str, "glob": str}, "pattern"),
		ReadOnly:    hostfuncs.ReadOnlyAlways,
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Pattern string `json:"pattern"`
			Path    string `json:"path"`
			Glob    string `json:"glob"`
		}
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		res, err := w.Search(t.Name(), in.Pattern, in.Path, in.Glob)
		if err != nil {
			return nil, err
		}
		return encode(res)
	}
	return t
}

func (w *Workspace) globTool() *hostfuncs.Tool {
	t := &hostfuncs.Tool{
		Namespace: PlanNamespace, Method: "file_glob",
		Description:  "List workspace paths matching a glob pattern (** matches any number of directories).",
		InputSchema:  schema(map[string]string{"pattern": str}, "pattern"),
		OutputSchema: schema(map[string]string{"paths": strList, "truncated": `{"type":"boolean"}`}, "paths"),
		ReadOnly:     hostfuncs.ReadOnlyAlways,
	}
	t.Execute = func(_ context.Context, input json.RawMessage) (json.RawMessage, error) {
		var in struct {
			Pattern string `json:"pattern"`
		}
		if err := decode(t.Name(), input, &in); err != nil {
			return nil, err
		}
		paths, truncated, err := w.Glob(t.Name(), in.Pattern)
		if err != nil {
			return nil, err
		}
		return encode(map[string]any{"paths": paths, "truncated": truncated})
	}
	return t
}
