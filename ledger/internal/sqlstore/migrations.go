package sqlstore

import (
	"github.com/google/uuid"

	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Migration is one version of a backend's schema: a file NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads dir/*.sql of fsys in version order and checks that the versions
// run 1, 2, 3, … without a gap; backend prefixes its errors.
func LoadMigrations(fsys fs.FS, dir, backend string) ([]Migration, error) {
	files, err := fs.Glob(fsys, dir+"/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, f := range files {
		base := strings.TrimPrefix(f, dir+"/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: migration %s: name must start with a positive version", backend, f)
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("%s: migration %s: want version %d", backend, m.Name, i+1)
		}
	}
	return ms, nil
}

// NewUUID returns a time-ordered UUIDv7 string, the default id of runs and mutations.
func NewUUID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
