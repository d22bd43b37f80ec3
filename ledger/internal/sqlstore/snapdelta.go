package sqlstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
)

// A snapshot is stored (in the lifecycle log where it holds them, Dialect.Embedded,
// else in run_snapshots) as what changed since the run's previous one: the fields of
// the run whose value differs, and under "~" the names of those that became empty
// (which the run's JSON leaves out). The first snapshot of a run, and one written
// without the previous one at hand (see snapshotBase), holds the whole run. Snapshots
// reads them back whole, each exactly the JSON of the run it was taken of. A transition used to log the whole run each time,
// its input state, prepared data and reservations again at every step of the run:
// with a state of 10 KB, seven copies per run in the log.

// deltaPrefix starts a snapshot logged as a change; a whole one starts with the run's
// first field, "id".
var deltaPrefix = []byte(`{"~":[`)

// runField is a field of scripthost.Run as its JSON has it.
type runField struct {
	index int
	name  string
	// omitted reports whether the run's JSON leaves the field out (omitempty or
	// omitzero); nil for a field it always holds.
	omitted func(reflect.Value) bool
}

// runFields are the fields of scripthost.Run in its JSON, read once from the struct.
var runFields = func() []runField {
	t := reflect.TypeFor[scripthost.Run]()
	var fs []runField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		f := runField{index: i, name: name}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				f.omitted = emptyValue
			case "omitzero":
				f.omitted = zeroValue
			}
		}
		fs = append(fs, f)
	}
	return fs
}()

// emptyValue is encoding/json's omitempty rule.
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// zeroValue is encoding/json's omitzero rule: the value's IsZero method where it has
// one, else the type's zero value.
func zeroValue(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero()
	}
	return v.IsZero()
}

// sameField reports whether two values of one field of a run have the same JSON.
func sameField(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Slice:
		if a.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
	case reflect.Struct:
		if ta, ok := a.Addr().Interface().(*time.Time); ok {
			tb := b.Addr().Interface().(*time.Time)
			return ta.Equal(*tb) && ta.Location() == tb.Location()
		}
	}
	return reflect.DeepEqual(a.Addr().Interface(), b.Addr().Interface())
}

// encodeSnapshot returns the snapshot of run as the log keeps it: what changed since
// prev, the run's previous snapshot, or the whole run when prev is nil.
func encodeSnapshot(prev, run *scripthost.Run) ([]byte, error) {
	if prev == nil || prev.ID != run.ID {
		return json.Marshal(run)
	}
	pv, rv := reflect.ValueOf(prev).Elem(), reflect.ValueOf(run).Elem()
	out := append(make([]byte, 0, 256), deltaPrefix...)
	var changed []byte
	removed := 0
	for _, f := range runFields {
		a, b := pv.Field(f.index), rv.Field(f.index)
		if sameField(a, b) {
			continue
		}
		if f.omitted != nil && f.omitted(b) {
			if removed > 0 {
				out = append(out, ',')
			}
			out = strconv.AppendQuote(out, f.name)
			removed++
			continue
		}
		v, err := json.Marshal(b.Addr().Interface())
		if err != nil {
			return nil, fmt.Errorf("snapshot of run %s: %s: %w", run.ID, f.name, err)
		}
		changed = append(changed, ',')
		changed = strconv.AppendQuote(changed, f.name)
		changed = append(changed, ':')
		changed = append(changed, v...)
	}
	out = append(out, ']')
	out = append(out, changed...)
	return append(out, '}'), nil
}

// snapshotLog rebuilds a run's snapshots from its log entries in order: each whole, as
// the JSON of the run it was taken of.
type snapshotLog struct {
	whole  []byte                     // the last whole entry, its fields read only if a change follows
	fields map[string]json.RawMessage // the run as of the last entry, by field, once a change needed them
}

// next returns the whole snapshot that entry, the run's next log entry, stands for.
func (l *snapshotLog) next(entry []byte) ([]byte, error) {
	if !bytes.HasPrefix(entry, deltaPrefix) {
		if !json.Valid(entry) {
			return nil, fmt.Errorf("the entry is not JSON")
		}
		l.whole, l.fields = entry, nil
		return entry, nil
	}
	if l.fields == nil {
		if l.whole == nil {
			return nil, fmt.Errorf("a change with no snapshot before it")
		}
		if err := json.Unmarshal(l.whole, &l.fields); err != nil {
			return nil, err
		}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(entry, &fields); err != nil {
		return nil, err
	}
	var removed []string
	if err := json.Unmarshal(fields["~"], &removed); err != nil {
		return nil, fmt.Errorf("removed fields: %w", err)
	}
	delete(fields, "~")
	for _, name := range removed {
		delete(l.fields, name)
	}
	for name, v := range fields {
		l.fields[name] = v
	}
	merged, err := json.Marshal(l.fields)
	if err != nil {
		return nil, err
	}
	// Through the run, so that the fields come in its order, as they came when the
	// snapshot was taken.
	var run scripthost.Run
	if err := json.Unmarshal(merged, &run); err != nil {
		return nil, err
	}
	return json.Marshal(run)
}
