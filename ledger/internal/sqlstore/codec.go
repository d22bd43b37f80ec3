package sqlstore

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// nanos stores a time as unix nanoseconds, the zero time as NULL. Times read back are
// UTC and equal (==) to what was written after the same normalization.
type nanos time.Time

func (t nanos) Value() (driver.Value, error) {
	tt := time.Time(t)
	if tt.IsZero() {
		return nil, nil
	}
	return tt.UnixNano(), nil
}

func (t *nanos) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*t = nanos{}
	case int64:
		*t = nanos(time.Unix(0, v).UTC())
	default:
		return fmt.Errorf("ledger: cannot scan %T into a time", v)
	}
	return nil
}

func (t nanos) Time() time.Time { return time.Time(t) }

// norm brings a caller's time to the stored precision and zone.
func norm(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.Unix(0, t.UnixNano()).UTC()
}

// rawJSON stores JSON text, an empty value as NULL.
type rawJSON []byte

func (j rawJSON) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	return string(j), nil
}

func (j *rawJSON) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*j = nil
	case string:
		*j = rawJSON(v)
	case []byte:
		*j = append(rawJSON(nil), v...)
	default:
		return fmt.Errorf("ledger: cannot scan %T into JSON", v)
	}
	return nil
}

func (j rawJSON) msg() json.RawMessage {
	if len(j) == 0 {
		return nil
	}
	return json.RawMessage(j)
}

// optString stores a string, the empty string as NULL (for references).
type optString string

func (s optString) Value() (driver.Value, error) {
	if s == "" {
		return nil, nil
	}
	return string(s), nil
}

func (s *optString) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*s = ""
	case string:
		*s = optString(v)
	case []byte:
		*s = optString(v)
	default:
		return fmt.Errorf("ledger: cannot scan %T into a string", v)
	}
	return nil
}

// valuesOf returns the values a row's fields (pointers, see runRow.fields) point at,
// so that one list gives a row's column order for both scanning and binding.
func valuesOf(fields []any) []any {
	out := make([]any, len(fields))
	for i, f := range fields {
		switch p := f.(type) {
		case *string:
			out[i] = *p
		case *int:
			out[i] = *p
		case *bool:
			out[i] = *p
		case *rawJSON:
			out[i] = *p
		case *nanos:
			out[i] = *p
		case *optString:
			out[i] = *p
		default: // a field type added since: right, only slower
			out[i] = reflect.ValueOf(f).Elem().Interface()
		}
	}
	return out
}

// jsonValue marshals v for a JSON column; nil stays NULL.
func jsonValue(v any) (rawJSON, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode: %w", err)
	}
	return b, nil
}

// checkJSON refuses a non-empty value that is not valid JSON.
func checkJSON(what string, b []byte) error {
	if len(b) != 0 && !json.Valid(b) {
		return fmt.Errorf("ledger: %s is not valid JSON", what)
	}
	return nil
}
