package httptool

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// encodeForm encodes an object as an application/x-www-form-urlencoded body, nested the
// way Stripe and Rails (Rack) read it:
//
//	{"amount": 100, "metadata": {"order": "o1"}, "items": [{"price": "p1"}]}
//	→ amount=100&items[0][price]=p1&metadata[order]=o1     (brackets percent-encoded)
//
// Keys are sorted at every level and array elements keep their order, so one input is
// always one body: a re-sent request is byte for byte the first. Strings are sent as
// they are, numbers as written, booleans as true/false; null, "", {} and [] are sent as
// an empty value ("key="), which Stripe reads as "unset". A key that is empty or holds
// '[' or ']' cannot be told apart from the nesting and is refused, naming where it is.
func encodeForm(fields map[string]any) (string, error) {
	var b strings.Builder
	var walk func(name string, v any) error
	pair := func(name, value string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(name))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(value))
	}
	walk = func(name string, v any) error {
		switch x := v.(type) {
		case nil:
			pair(name, "")
		case string:
			pair(name, x)
		case bool:
			pair(name, strconv.FormatBool(x))
		case json.Number:
			pair(name, x.String())
		case float64:
			pair(name, strconv.FormatFloat(x, 'f', -1, 64))
		case map[string]any:
			if len(x) == 0 {
				pair(name, "")
				return nil
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if err := checkFormKey(name, k); err != nil {
					return err
				}
				if err := walk(name+"["+k+"]", x[k]); err != nil {
					return err
				}
			}
		case []any:
			if len(x) == 0 {
				pair(name, "")
				return nil
			}
			for i, e := range x {
				if err := walk(name+"["+strconv.Itoa(i)+"]", e); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("form body: %s: cannot encode a %T", name, v)
		}
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if err := checkFormKey("", k); err != nil {
			return "", err
		}
		if err := walk(k, fields[k]); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func checkFormKey(parent, k string) error {
	where := "the top level"
	if parent != "" {
		where = parent
	}
	switch {
	case k == "":
		return fmt.Errorf("form body: an empty key at %s cannot be encoded", where)
	case strings.ContainsAny(k, "[]"):
		return fmt.Errorf("form body: key %q at %s: '[' and ']' in a key cannot be told apart from nesting", k, where)
	}
	return nil
}
