package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// workflowDetail is what show prints for a workflow: one stored version, with the
// files it was built from.
type workflowDetail struct {
	Workflow   string              `json:"workflow"`
	Version    int                 `json:"version"`
	Latest     int                 `json:"latest_version"`
	Paused     bool                `json:"paused"`
	Language   string              `json:"language"`
	Path       string              `json:"path"`
	Hash       string              `json:"hash"`
	Size       int                 `json:"size"`
	Manifest   []ledger.SourceFile `json:"manifest"`
	Definition json.RawMessage     `json:"definition,omitempty"`
	CreatedAt  time.Time           `json:"created_at"`
}

// showWorkflow prints version (0: the latest) of the workflow called name as JSON, or
// as text: its fields and the manifest, one file a line with its SHA-256 and size.
func showWorkflow(ctx context.Context, w io.Writer, store ledger.Store, name string, version int, asJSON bool) error {
	wf, err := store.Workflow(ctx, name)
	if err != nil {
		return err
	}
	v, err := store.WorkflowVersion(ctx, name, version)
	if err != nil {
		return err
	}
	d := workflowDetail{Workflow: v.Workflow, Version: v.Version, Latest: wf.LatestVersion, Paused: wf.Paused,
		Language: v.Language, Path: v.Path, Hash: v.Hash, Size: len(v.Source), Manifest: v.Manifest,
		Definition: v.Definition, CreatedAt: v.CreatedAt}
	if d.Manifest == nil {
		d.Manifest = []ledger.SourceFile{}
	}
	if asJSON {
		return printJSON(w, d)
	}
	fmt.Fprintf(w, "workflow %s version %d of %d (%s)\npath     %s\nhash     %s (%d bytes stored)\ncreated  %s\n",
		d.Workflow, d.Version, d.Latest, d.Language, d.Path, d.Hash, d.Size, d.CreatedAt.Format(time.RFC3339))
	if len(d.Manifest) == 0 {
		fmt.Fprintln(w, "files    (no manifest: stored before manifests were kept, or a Wasm module)")
		return nil
	}
	rows := make([][]string, 0, len(d.Manifest))
	for _, f := range d.Manifest {
		rows = append(rows, []string{f.Path, f.SHA256, fmt.Sprint(f.Size)})
	}
	fmt.Fprintln(w)
	return table(w, "FILE\tSHA256\tSIZE", rows)
}

// isNotFound reports whether err says a run or workflow does not exist.
func isNotFound(err error) bool { return errors.Is(err, ledger.ErrNotFound) }
