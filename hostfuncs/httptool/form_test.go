package httptool

import (
	"bytes"
	"encoding/json"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func decodeObject(t testing.TB, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return m
}

func TestEncodeForm(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // with brackets written plainly; they are sent percent-encoded
	}{
		{"flat, sorted", `{"currency":"usd","amount":2000}`, "amount=2000&currency=usd"},
		{"nested map", `{"metadata":{"order":"o1","batch":"b7"}}`, "metadata[batch]=b7&metadata[order]=o1"},
		{"array of maps", `{"items":[{"price":"p1","quantity":2},{"price":"p2"}]}`, "items[0][price]=p1&items[0][quantity]=2&items[1][price]=p2"},
		{"array order kept past 9", `{"a":[0,1,2,3,4,5,6,7,8,9,10]}`, "a[0]=0&a[1]=1&a[2]=2&a[3]=3&a[4]=4&a[5]=5&a[6]=6&a[7]=7&a[8]=8&a[9]=9&a[10]=10"},
		{"array of scalars", `{"expand":["customer","invoice"]}`, "expand[0]=customer&expand[1]=invoice"},
		{"deep", `{"a":{"b":{"c":[{"d":true}]}}}`, "a[b][c][0][d]=true"},
		{"booleans", `{"capture":false,"livemode":true}`, "capture=false&livemode=true"},
		{"numbers as written", `{"i":-12,"f":1.50,"e":1e3,"big":12345678901234567890}`, "big=12345678901234567890&e=1e3&f=1.50&i=-12"},
		{"empty values unset", `{"description":"","metadata":{},"tags":[],"coupon":null}`, "coupon=&description=&metadata=&tags="},
		{"escaping", `{"note":"a&b=c d+e%f/é","we ird":"x"}`, "note=a%26b%3Dc+d%2Be%25f%2F%C3%A9&we+ird=x"},
		{"escaped nested key", `{"metadata":{"a&b":"1=2"}}`, "metadata[a%26b]=1%3D2"},
		{"empty object", `{}`, ""},
	}
	plain := strings.NewReplacer("%5B", "[", "%5D", "]")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeForm(decodeObject(t, tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if plain.Replace(got) != tt.want {
				t.Errorf("got %s, want %s", plain.Replace(got), tt.want)
			}
			if strings.ContainsAny(got, "[]") {
				t.Errorf("got %s, want brackets percent-encoded", got)
			}
			checkRoundTrip(t, decodeObject(t, tt.in), got)
		})
	}
}

func TestEncodeFormRefusesAmbiguousKeys(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a[b]":1}`, `key "a[b]" at the top level`},
		{`{"metadata":{"x]":1}}`, `key "x]" at metadata`},
		{`{"items":[{"":1}]}`, "empty key at items[0]"},
		{`{"":1}`, "empty key at the top level"},
	}
	for _, tt := range tests {
		_, err := encodeForm(decodeObject(t, tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "form body: ") {
			t.Errorf("%s: got %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
}

// checkRoundTrip parses body with Go's form parser, rebuilds the tree from the bracket
// paths, and compares it with in as a form can carry it: scalars as text, arrays as
// objects keyed by index, empty values as "".
func checkRoundTrip(t testing.TB, in map[string]any, body string) {
	t.Helper()
	vals, err := url.ParseQuery(body)
	if err != nil {
		t.Fatalf("Go's form parser refuses %q: %v", body, err)
	}
	got := map[string]any{}
	for k, vs := range vals {
		if len(vs) != 1 {
			t.Fatalf("key %q sent %d times in %q", k, len(vs), body)
		}
		path := splitFormKey(t, k)
		node := got
		for _, p := range path[:len(path)-1] {
			next, ok := node[p].(map[string]any)
			if !ok {
				if _, leaf := node[p]; leaf {
					t.Fatalf("key %q: %q is both a value and a parent in %q", k, p, body)
				}
				next = map[string]any{}
				node[p] = next
			}
			node = next
		}
		last := path[len(path)-1]
		if _, dup := node[last]; dup {
			t.Fatalf("key %q set twice in %q", k, body)
		}
		node[last] = vs[0]
	}
	want, _ := formShape(in).(map[string]any)
	if want == nil {
		want = map[string]any{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip of %q:\ngot  %#v\nwant %#v", body, got, want)
	}
}

func splitFormKey(t testing.TB, k string) []string {
	i := strings.IndexByte(k, '[')
	if i < 0 {
		return []string{k}
	}
	path := []string{k[:i]}
	rest := k[i:]
	for rest != "" {
		j := strings.IndexByte(rest, ']')
		if rest[0] != '[' || j < 0 {
			t.Fatalf("key %q is not name[a][b]…", k)
		}
		path = append(path, rest[1:j])
		rest = rest[j+1:]
	}
	return path
}

func formShape(v any) any {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case json.Number:
		return x.String()
	case map[string]any:
		if len(x) == 0 {
			return ""
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = formShape(e)
		}
		return out
	case []any:
		if len(x) == 0 {
			return ""
		}
		out := map[string]any{}
		for i, e := range x {
			out[strconv.Itoa(i)] = formShape(e)
		}
		return out
	}
	return v
}

// hasBadKey reports whether any key in v is empty or holds a bracket.
func hasBadKey(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "" || strings.ContainsAny(k, "[]") || hasBadKey(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasBadKey(e) {
				return true
			}
		}
	}
	return false
}

// FuzzFormRoundTrip encodes any JSON object as a form body and checks that Go's form
// parser reads back exactly the object, or that the encoder refused a key it cannot
// encode.
func FuzzFormRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"amount":2000,"currency":"usd","metadata":{"order":"o1"}}`,
		`{"items":[{"price":"p1","quantity":2},{"price":"p2"}],"expand":["a","b"]}`,
		`{"a":{"b":{"c":[true,false,null,"",{},[]]}}}`,
		`{"n":-1.5e-3,"s":"a&b=c d+e%f/é;x","k y":"z"}`,
		`{"a[b]":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var in map[string]any
		if dec.Decode(&in) != nil || in == nil {
			return
		}
		body, err := encodeForm(in)
		if err != nil {
			if !hasBadKey(in) {
				t.Fatalf("%s: refused without an ambiguous key: %v", data, err)
			}
			return
		}
		checkRoundTrip(t, in, body)
		if again, _ := encodeForm(in); again != body {
			t.Fatalf("two encodings differ:\n%s\n%s", body, again)
		}
	})
}
