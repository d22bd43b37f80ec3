package workspace

import (
	"errors"
	"io/fs"
	"strings"
)

// tempSuffix and tempHexLen describe tempName's names: "." + base + ".tmp-" and 12
// lowercase hex digits.
const (
	tempSuffix = ".tmp-"
	tempHexLen = 12
)

// IsTempName reports whether name has the form of the temporary files Write and
// Create make beside the file they write, and only that form: a leading dot, a
// non-empty base, ".tmp-" and exactly 12 lowercase hex digits.
func IsTempName(name string) bool {
	i := strings.LastIndex(name, tempSuffix)
	if i < 2 || name[0] != '.' || len(name)-i-len(tempSuffix) != tempHexLen {
		return false
	}
	for _, c := range name[i+len(tempSuffix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// RemoveTemps removes the temporary files of writes that were killed before they
// renamed them into place: regular files anywhere in the workspace whose name
// IsTempName. Symbolic links, directories and every other name are left alone, and
// links are not followed. It returns the removed files' relative paths. A write in
// progress in another process at the same moment would fail (its rename finds no
// file) rather than write anything wrong.
func (w *Workspace) RemoveTemps() ([]string, error) {
	var removed []string
	var errs []error
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != "." {
				errs = append(errs, err)
				return nil // an unreadable directory: the rest is still swept
			}
			return err
		}
		if !d.Type().IsRegular() || !IsTempName(d.Name()) {
			return nil
		}
		if err := w.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			return nil
		}
		removed = append(removed, p)
		return nil
	})
	return removed, errors.Join(append(errs, err)...)
}
