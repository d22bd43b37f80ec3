package workspace

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/scripthost/scripthost"
)

// Entry is one item of a directory listing.
type Entry struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
	Dir  bool   `json:"dir"`
}

// MaxReadBytes is the largest file Read returns.
const MaxReadBytes = 8 << 20

// List returns the entries of directory dir, sorted by name.
func (w *Workspace) List(op, dir string) ([]Entry, error) {
	clean, err := w.Clean(op, dir)
	if err != nil {
		return nil, err
	}
	f, err := w.root.Open(clean)
	if err != nil {
		return nil, classify(op, dir, err)
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, classify(op, dir, err)
	}
	out := make([]Entry, 0, len(des))
	for _, de := range des {
		e := Entry{Name: de.Name(), Dir: de.IsDir()}
		if info, err := de.Info(); err == nil && !de.IsDir() {
			e.Size = info.Size()
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Read returns the content of file p.
func (w *Workspace) Read(op, p string) ([]byte, error) {
	clean, err := w.Clean(op, p)
	if err != nil {
		return nil, err
	}
	info, err := w.root.Stat(clean)
	if err != nil {
		return nil, classify(op, p, err)
	}
	if !info.Mode().IsRegular() {
		return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeNotFile, Op: op, Message: fmt.Sprintf("%s: not a regular file", p)}
	}
	if info.Size() > MaxReadBytes {
		return nil, &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeLimit, Op: op, Message: fmt.Sprintf("%s: %d bytes is more than the %d a read returns", p, info.Size(), MaxReadBytes)}
	}
	b, err := w.root.ReadFile(clean)
	return b, classify(op, p, err)
}

// Write replaces file p with content atomically: the content goes to a temporary file
// in the same directory, is synced, and is renamed over p. Parent directories are
// created. Writing the same content again leaves the file as it is, so a repeated call
// with the same idempotency key is harmless.
func (w *Workspace) Write(op, p string, content []byte) error {
	clean, err := lexical(op, p)
	if err != nil {
		return err
	}
	if clean == "." {
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeNotFile, Op: op, Message: "the workspace root is not a file"}
	}
	if done, err := w.writeDirect(op, p, clean, content); done {
		return err
	}
	if err := w.checkLinks(op, p, filepath.FromSlash(clean)); err != nil {
		return err
	}
	if old, err := w.root.ReadFile(clean); err == nil && bytes.Equal(old, content) {
		return nil
	}
	tmp, err := w.writeTemp(op, p, clean, content)
	if err != nil {
		return err
	}
	if err := w.root.Rename(tmp, clean); err != nil {
		_ = w.root.Remove(tmp)
		return classify(op, p, err)
	}
	return nil
}

// Create writes file p with content, failing with CodeExists when p exists. The file
// appears whole or not at all: the content is written to a temporary file that is then
// hard-linked to p, which fails if p exists.
func (w *Workspace) Create(op, p string, content []byte) error {
	clean, err := w.Clean(op, p)
	if err != nil {
		return err
	}
	if clean == "." {
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeExists, Op: op, Message: "the workspace root already exists"}
	}
	tmp, err := w.writeTemp(op, p, clean, content)
	if err != nil {
		return err
	}
	defer func() { _ = w.root.Remove(tmp) }()
	if err := w.root.Link(tmp, clean); err != nil {
		return classify(op, p, err)
	}
	return nil
}

// writeTemp creates the parent directories of clean and writes content to a new
// temporary file beside it, returning the temporary file's relative name.
func (w *Workspace) writeTemp(op, p, clean string, content []byte) (string, error) {
	dir := path.Dir(clean)
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", classify(op, p, err)
		}
	}
	tmp := path.Join(dir, tempName(path.Base(clean)))
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", classify(op, p, err)
	}
	_, werr := f.Write(content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = w.root.Remove(tmp)
		return "", classify(op, p, werr)
	}
	return tmp, nil
}

// tempName is the name of a temporary file beside the file base: hidden, and random
// so that concurrent writers of one file do not collide.
func tempName(base string) string {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return "." + base + ".tmp-" + hex.EncodeToString(rnd[:])
}

// Move renames from to to, creating to's parent directories. An existing file at to is
// replaced, as rename(2) does.
func (w *Workspace) Move(op, from, to string) error {
	cf, err := w.Clean(op, from)
	if err != nil {
		return err
	}
	ct, err := w.Clean(op, to)
	if err != nil {
		return err
	}
	if cf == "." || ct == "." {
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: "the workspace root cannot be moved"}
	}
	if _, err := w.root.Lstat(cf); err != nil {
		return classify(op, from, err)
	}
	if dir := path.Dir(ct); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return classify(op, to, err)
		}
	}
	return classify(op, from, w.root.Rename(cf, ct))
}

// Delete removes file or empty directory p. Deleting a path that does not exist fails
// with CodeNotFound.
func (w *Workspace) Delete(op, p string) error {
	clean, err := w.Clean(op, p)
	if err != nil {
		return err
	}
	if clean == "." {
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: "the workspace root cannot be deleted"}
	}
	return classify(op, p, w.root.Remove(clean))
}

// Exists reports whether p exists and whether it is a directory. A refused path is an
// error.
func (w *Workspace) Exists(op, p string) (exists, dir bool, err error) {
	clean, err := w.Clean(op, p)
	if err != nil {
		return false, false, err
	}
	info, err := w.root.Stat(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, classify(op, p, err)
	}
	return true, info.IsDir(), nil
}
