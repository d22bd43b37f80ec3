package sqlstore

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestRowFieldsFollowColumns checks that a row's fields(), scanned from a SELECT of
// its columns, point at the fields those columns name, and its values(), bound to an
// INSERT or UPDATE of them, are those fields' values, in the columns' order.
func TestRowFieldsFollowColumns(t *testing.T) {
	run, mutation := &runRow{}, &mutationRow{}
	// Every field a value of its own, so that two fields swapped are told apart.
	for _, row := range []any{run, mutation} {
		v := reflect.ValueOf(row).Elem()
		for i := range v.NumField() {
			switch f := v.Field(i); f.Kind() {
			case reflect.String:
				f.SetString(fmt.Sprint("v", i))
			case reflect.Int, reflect.Int64:
				f.SetInt(int64(i))
			case reflect.Bool:
				f.SetBool(true)
			case reflect.Slice:
				f.SetBytes([]byte(fmt.Sprint(i)))
			case reflect.Struct: // nanos
				f.Set(reflect.ValueOf(nanos(time.Unix(int64(i), 0))))
			default:
				t.Fatalf("field %s: no test value for kind %s", v.Type().Field(i).Name, f.Kind())
			}
		}
	}
	for _, c := range []struct {
		name           string
		row            any
		fields, values []any
		cols           string
	}{
		{"runs", run, run.fields(), run.values(), runColumns},
		{"mutations", mutation, mutation.fields(), mutation.values(), mutationColumns},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := reflect.ValueOf(c.row).Elem()
			byTag := map[string]uintptr{}
			for i := range v.NumField() {
				byTag[v.Type().Field(i).Tag.Get("db")] = v.Field(i).Addr().Pointer()
			}
			cols := columnList(c.cols)
			if len(cols) != len(c.fields) || len(cols) != v.NumField() {
				t.Fatalf("got %d fields for %d columns and %d struct fields", len(c.fields), len(cols), v.NumField())
			}
			for i, col := range cols {
				if got, want := reflect.ValueOf(c.fields[i]).Pointer(), byTag[col]; got != want {
					t.Errorf("field %d: got a pointer to another field than column %s's", i, col)
				}
				if got, want := c.values[i], reflect.ValueOf(c.fields[i]).Elem().Interface(); !reflect.DeepEqual(got, want) {
					t.Errorf("value %d: got %v, want column %s's %v", i, got, col, want)
				}
			}
		})
	}
}
