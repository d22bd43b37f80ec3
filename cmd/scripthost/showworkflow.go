package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
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
	var packages bool
	for _, f := range packageRows(d.Manifest) {
		packages = packages || f.Files > 1
		rows = append(rows, []string{f.Path, f.SHA256, fmt.Sprint(f.Size)})
	}
	fmt.Fprintln(w)
	if err := table(w, "FILE\tSHA256\tSIZE", rows); err != nil {
		return err
	}
	if packages {
		fmt.Fprintln(w, "\na package is one row: its files' count and total size, and the SHA-256 of their paths and hashes; --json lists every file")
	}
	return nil
}

// packageRow is a manifest row as show prints it: one file, or every file of one npm
// package (node_modules/NAME/ or node_modules/@SCOPE/NAME/) folded into one.
type packageRow struct {
	ledger.SourceFile
	Files int
}

// packageRows folds the files of each package in m into one row, in m's order of first
// appearance; the row's hash is the SHA-256 of its files' "path hash" lines.
func packageRows(m []ledger.SourceFile) []packageRow {
	var out []packageRow
	at := map[string]int{}
	sums := map[string]hash.Hash{}
	for _, f := range m {
		pkg := packageDir(f.Path)
		if pkg == "" {
			out = append(out, packageRow{SourceFile: f, Files: 1})
			continue
		}
		i, ok := at[pkg]
		if !ok {
			i = len(out)
			at[pkg] = i
			sums[pkg] = sha256.New()
			out = append(out, packageRow{SourceFile: ledger.SourceFile{Path: pkg}})
		}
		fmt.Fprintf(sums[pkg], "%s %s\n", f.Path, f.SHA256)
		out[i].Files++
		out[i].Size += f.Size
	}
	for pkg, i := range at {
		out[i].SHA256 = hex.EncodeToString(sums[pkg].Sum(nil))
		unit := "files"
		if out[i].Files == 1 {
			unit = "file"
		}
		out[i].Path = fmt.Sprintf("%s (%d %s)", pkg, out[i].Files, unit)
	}
	return out
}

// packageDir is the directory of the npm package p lies in, ending in "/", or "" for
// a file of the project itself.
func packageDir(p string) string {
	parts := strings.Split(p, "/")
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] != "node_modules" {
			continue
		}
		n := i + 2
		if n < len(parts) && strings.HasPrefix(parts[i+1], "@") {
			n++
		}
		if n < len(parts) {
			return strings.Join(parts[:n], "/") + "/"
		}
	}
	return ""
}

// isNotFound reports whether err says a run or workflow does not exist.
func isNotFound(err error) bool { return errors.Is(err, ledger.ErrNotFound) }
