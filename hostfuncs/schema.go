package hostfuncs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaCache maps a schema's text to its compiled form. Keying by content rather than
// by tool means a schema is compiled once however many wrappers, tools or registries
// share it, and a tool whose schema changes is never validated against a stale one.
var schemaCache sync.Map // string → *compiled

type compiled struct {
	once   sync.Once
	schema *jsonschema.Schema
	err    error
}

var printer = message.NewPrinter(language.English)

// compileSchema returns the compiled schema for raw. A nil or empty raw gives nil: the
// tool accepts anything. Remote references are not loaded: a schema must be
// self-contained.
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	v, ok := schemaCache.Load(string(raw)) // no copy of raw: the conversion is only a key
	if !ok {
		v, _ = schemaCache.LoadOrStore(string(raw), &compiled{})
	}
	c := v.(*compiled)
	c.once.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			c.err = fmt.Errorf("hostfuncs: schema is not JSON: %w", err)
			return
		}
		comp := jsonschema.NewCompiler()
		const loc = "mem:///schema.json"
		if err := comp.AddResource(loc, doc); err != nil {
			c.err = fmt.Errorf("hostfuncs: schema: %w", err)
			return
		}
		c.schema, c.err = comp.Compile(loc)
		if c.err != nil {
			c.err = fmt.Errorf("hostfuncs: schema: %w", c.err)
		}
	})
	return c.schema, c.err
}

// CompileSchema checks that raw is a valid, self-contained JSON Schema. Tool loaders
// call it to report a bad schema when the tool is declared rather than when it is
// first called.
func CompileSchema(raw []byte) error {
	_, err := compileSchema(raw)
	return err
}

// ValidateJSON checks the JSON document doc against the JSON Schema schema (compiled
// once per schema text and cached) and returns every violation as "pointer: message",
// sorted by pointer, with the document root shown as "(root)". An empty schema accepts
// anything. The error reports a schema that does not compile or a document that is not
// JSON.
func ValidateJSON(schema, doc []byte) ([]string, error) {
	sch, err := compileSchema(schema)
	if err != nil || sch == nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("hostfuncs: not JSON: %w", err)
	}
	return validateValue(sch, v)
}

// validateValue checks a decoded JSON value (from jsonschema.UnmarshalJSON) against
// sch and returns every violation as "pointer: message", sorted by pointer. The
// instance root is shown as "(root)".
func validateValue(sch *jsonschema.Schema, v any) ([]string, error) {
	if sch == nil {
		return nil, nil
	}
	// The validator computes with numbers exactly (math/big): it fails on a number whose
	// exponent math/big refuses, and one it accepts can take seconds to compare.
	if hasHugeNumber(v) {
		out := hugeNumbers(v, nil, nil)
		sort.Strings(out)
		return out, nil
	}
	err := sch.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			// The validator lists unknown properties in map order; sorted, the same
			// input always gets the same message.
			if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
				sort.Strings(ap.Properties)
			}
			out = append(out, pointer(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	return dedupe(out), nil
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// maxDecimalExponent bounds the decimal exponent of a number in a validated document
// (that of 1e300, 0.001 or 12e-5 is 300, -3, -5): far beyond float64's range, and
// cheap to compute with exactly.
const maxDecimalExponent = 10000

// hasHugeNumber reports whether v (a value from jsonschema.UnmarshalJSON) holds a
// number whose decimal exponent is beyond ±maxDecimalExponent.
func hasHugeNumber(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			if hasHugeNumber(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if hasHugeNumber(e) {
				return true
			}
		}
	case json.Number:
		return !decimalExponentWithin(string(t), maxDecimalExponent)
	}
	return false
}

// hugeNumbers returns a problem for every number in v that hasHugeNumber finds, at
// path, appended to out.
func hugeNumbers(v any, path, out []string) []string {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			out = hugeNumbers(e, append(path[:len(path):len(path)], k), out)
		}
	case []any:
		for i, e := range t {
			out = hugeNumbers(e, append(path[:len(path):len(path)], strconv.Itoa(i)), out)
		}
	case json.Number:
		if !decimalExponentWithin(string(t), maxDecimalExponent) {
			out = append(out, fmt.Sprintf("%s: number %.40s is out of range (its decimal exponent is beyond ±%d)",
				pointer(path), t, maxDecimalExponent))
		}
	}
	return out
}

// decimalExponentWithin reports whether the JSON number n, written as digits with its
// decimal point removed times ten to an exponent, has that exponent within ±limit.
func decimalExponentWithin(n string, limit int) bool {
	mant, exp := n, ""
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		mant, exp = n[:i], n[i+1:]
	}
	e := 0
	if exp != "" {
		x, err := strconv.Atoi(strings.TrimPrefix(exp, "+"))
		if err != nil {
			return false // too many digits for an int: far out of range
		}
		e = x
	}
	if _, frac, ok := strings.Cut(mant, "."); ok {
		e -= len(frac)
	}
	return e >= -limit && e <= limit
}

func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return "(root)"
	}
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(pointerEscaper.Replace(t))
	}
	return sb.String()
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
