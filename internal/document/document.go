// Package document decodes, strictly, the documents that a hash or an approval covers
// or that configure tools: plans, authorizations, HTTP tool files and agent task files.
//
// encoding/json matches keys case-insensitively and lets the last of two equal keys
// win, so {"Steps":[…],"steps":[…]} means one thing to a hash over the text and
// another to the decoder. Here every document is read into a tree first and refused
// when any object has the same key twice (compared after unescaping, at any depth),
// a key is not exactly a field of the target type (case variants are unknown keys),
// a key holds NUL, the text is not UTF-8 or a string holds a lone UTF-16 surrogate
// (both would decode to U+FFFD), or anything follows the document. Only then is the
// tree decoded into the target. Every refusal is an *Error naming the file, line,
// column and key path.
package document

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/scripthost/scripthost/internal/yamlerr"
)

// maxDepth is encoding/json's own nesting limit: nothing it decodes is refused here
// for depth, and a hostile document cannot exhaust the stack.
const maxDepth = 10000

// Error is a refused document: where and why.
type Error struct {
	// File is the name given to JSON or YAML; it may be empty.
	File string
	// Line and Column are 1-based (Column counts bytes); 0 when unknown.
	Line, Column int
	// Path is the JSON pointer of the value concerned (of its object, for a key), ""
	// for the document itself.
	Path string
	// Msg says what is wrong.
	Msg string
	// Err is the underlying decoder error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0 && e.Column > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying decoder error.
func (e *Error) Unwrap() error { return e.Err }

// JSON decodes the JSON document data into v (a non-nil pointer) under the rules of
// the package doc. name names the document in errors. Numbers decoded into an
// interface are json.Number, as with json.Decoder.UseNumber.
func JSON(name string, data []byte, v any) error {
	r := &reader{name: name, data: data}
	root, err := r.parseJSON()
	if err != nil {
		return err
	}
	return r.finish(root, v)
}

// YAML decodes the YAML document data into v under the rules of the package doc,
// with JSON's field names (json tags) and types: the document is read as the JSON
// value it denotes. Merge keys (<<) are refused, as they override keys; keys must be
// strings.
func YAML(name string, data []byte, v any) error {
	r := &reader{name: name, data: data}
	root, err := r.parseYAML()
	if err != nil {
		return err
	}
	return r.finish(root, v)
}

// node is one value of the document, as JSON sees it.
type node struct {
	kind  byte // '{' object, '[' array, 's' string, 'n' number, 't' bool, '0' null
	line  int
	col   int
	str   string // a string's value, a number's literal
	b     bool
	keys  []key   // an object's keys, in document order
	elems []*node // an object's values or an array's elements
}

type key struct {
	name      string
	line, col int
}

type reader struct {
	name string
	data []byte
	// lines holds the offset of each line's first byte, for positions of JSON offsets.
	lines []int
	// spans maps offsets of the re-encoded document back to the nodes, for decode
	// errors.
	spans []span
	// budget bounds the nodes a YAML document expands to through aliases: a few
	// times what its text could hold without them.
	budget int
}

type span struct {
	off  int
	n    *node
	path *ptr
}

func (r *reader) errAt(line, col int, path *ptr, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	p := path.String()
	if p != "" {
		msg += " at " + p
	}
	return &Error{File: r.name, Line: line, Column: col, Path: p, Msg: msg, Err: err}
}

// pos turns a byte offset of data into a 1-based line and column.
func (r *reader) pos(off int) (int, int) {
	if r.lines == nil {
		r.lines = []int{0}
		for i, c := range r.data {
			if c == '\n' {
				r.lines = append(r.lines, i+1)
			}
		}
	}
	off = min(max(off, 0), len(r.data))
	i := sort.Search(len(r.lines), func(i int) bool { return r.lines[i] > off }) - 1
	return i + 1, off - r.lines[i] + 1
}

// checkUTF8 refuses text that is not UTF-8: decoders turn each bad byte into U+FFFD,
// so two different documents would read the same.
func (r *reader) checkUTF8() error {
	if utf8.Valid(r.data) {
		return nil
	}
	off := 0
	for off < len(r.data) {
		c, size := utf8.DecodeRune(r.data[off:])
		if c == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	line, col := r.pos(off)
	return r.errAt(line, col, nil, nil, "invalid UTF-8")
}

func (r *reader) parseJSON() (*node, error) {
	if err := r.checkUTF8(); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(r.data)) == 0 {
		return nil, r.errAt(0, 0, nil, nil, "empty document")
	}
	dec := json.NewDecoder(bytes.NewReader(r.data))
	dec.UseNumber()
	p := &jsonParser{r: r, dec: dec}
	root, err := p.value(nil, 0)
	if err != nil {
		return nil, err
	}
	// dec.More is false before a stray '}' or ']': only the end of input will do.
	start := p.next()
	if _, err := dec.Token(); err != io.EOF {
		line, col := r.pos(start)
		return nil, r.errAt(line, col, nil, nil, "data after the JSON document")
	}
	return root, nil
}

type jsonParser struct {
	r   *reader
	dec *json.Decoder
}

// next returns the offset of the next token: past white space and the ',' or ':'
// that the decoder consumes with it.
func (p *jsonParser) next() int {
	off := int(p.dec.InputOffset())
	for off < len(p.r.data) && strings.IndexByte(" \t\r\n,:", p.r.data[off]) >= 0 {
		off++
	}
	return off
}

// token reads one token and returns it with its offset and its text.
func (p *jsonParser) token() (json.Token, int, []byte, error) {
	start := p.next()
	tok, err := p.dec.Token()
	if err != nil {
		off := start
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset)
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		line, col := p.r.pos(off)
		return nil, 0, nil, p.r.errAt(line, col, nil, err, "invalid JSON: %v", err)
	}
	return tok, start, p.r.data[start:p.dec.InputOffset()], nil
}

func (p *jsonParser) value(path *ptr, depth int) (*node, error) {
	tok, start, text, err := p.token()
	if err != nil {
		return nil, err
	}
	return p.fromToken(tok, start, text, path, depth)
}

func (p *jsonParser) fromToken(tok json.Token, start int, text []byte, path *ptr, depth int) (*node, error) {
	line, col := p.r.pos(start)
	n := &node{line: line, col: col}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, p.r.errAt(line, col, path, nil, "nested deeper than %d", maxDepth)
		}
		if t == '[' {
			n.kind = '['
			for i := 0; ; i++ {
				tok, start, text, err := p.token()
				if err != nil {
					return nil, err
				}
				if tok == json.Delim(']') {
					return n, nil
				}
				e, err := p.fromToken(tok, start, text, path.at(i), depth+1)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, e)
			}
		}
		n.kind = '{'
		seen := map[string]int{}
		for {
			tok, start, text, err := p.token()
			if err != nil {
				return nil, err
			}
			if tok == json.Delim('}') {
				return n, nil
			}
			name := tok.(string) // the decoder allows nothing else here
			kl, kc := p.r.pos(start)
			if err := p.r.checkKey(name, text, kl, kc, path, seen, n); err != nil {
				return nil, err
			}
			v, err := p.value(path.key(name), depth+1)
			if err != nil {
				return nil, err
			}
			seen[name] = len(n.keys)
			n.keys = append(n.keys, key{name: name, line: kl, col: kc})
			n.elems = append(n.elems, v)
		}
	case string:
		if err := checkEscapes(text); err != nil {
			return nil, p.r.errAt(line, col, path, nil, "%v", err)
		}
		n.kind, n.str = 's', t
	case json.Number:
		n.kind, n.str = 'n', string(t)
	case bool:
		n.kind, n.b = 't', t
	case nil:
		n.kind = '0'
	}
	return n, nil
}

// checkKey refuses a key with NUL, a lone surrogate or one its object already has.
// text is the key's literal, nil for YAML.
func (r *reader) checkKey(name string, text []byte, line, col int, path *ptr, seen map[string]int, obj *node) error {
	if text != nil {
		if err := checkEscapes(text); err != nil {
			return r.errAt(line, col, path, nil, "key %s: %v", text, err)
		}
	}
	if strings.IndexByte(name, 0) >= 0 {
		return r.errAt(line, col, path, nil, "key %q holds NUL", name)
	}
	if i, dup := seen[name]; dup {
		first := obj.keys[i]
		return r.errAt(line, col, path, nil, "duplicate key %q (first at line %d, column %d)", name, first.line, first.col)
	}
	return nil
}

// checkEscapes refuses a JSON string literal with a \u escape of a lone UTF-16
// surrogate, which decodes to U+FFFD as every other lone surrogate does.
func checkEscapes(lit []byte) error {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(lit) || lit[i] != '\\' || lit[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(lit[i+2:i+6]), 16, 32)
		return rune(v), err == nil
	}
	for i := 0; i < len(lit); i++ {
		if lit[i] != '\\' {
			continue
		}
		if i+1 < len(lit) && lit[i+1] != 'u' {
			i++
			continue
		}
		c, _ := hex4(i)
		switch {
		case c >= 0xD800 && c < 0xDC00:
			if lo, ok := hex4(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
				i += 11
				continue
			}
			fallthrough
		case c >= 0xDC00 && c < 0xE000:
			return fmt.Errorf("lone UTF-16 surrogate %s", lit[i:i+6])
		}
		i += 5
	}
	return nil
}

// ptr is a JSON pointer built up as a walk descends, spelled out only for an error:
// a walk that joined strings at each level would be quadratic in the depth.
type ptr struct {
	up    *ptr
	name  string
	index int // -1 for a key
}

func (p *ptr) key(name string) *ptr { return &ptr{up: p, name: name, index: -1} }
func (p *ptr) at(i int) *ptr        { return &ptr{up: p, index: i} }

// String returns the pointer, "" for the document itself (a nil *ptr).
func (p *ptr) String() string {
	var parts []string
	for ; p != nil; p = p.up {
		if p.index >= 0 {
			parts = append(parts, strconv.Itoa(p.index))
		} else {
			parts = append(parts, strings.ReplaceAll(strings.ReplaceAll(p.name, "~", "~0"), "/", "~1"))
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteString("/" + parts[i])
	}
	return b.String()
}

func (r *reader) parseYAML() (*node, error) {
	if err := r.checkUTF8(); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(r.data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, r.errAt(0, 0, nil, nil, "empty document")
		}
		return nil, r.yamlSyntax(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == io.EOF:
	case err != nil:
		return nil, r.yamlSyntax(err)
	default:
		return nil, r.errAt(next.Line, next.Column, nil, nil, "a second YAML document")
	}
	r.budget = 4*len(r.data) + 1000
	return r.fromYAML(&doc, nil, 0)
}

// yamlSyntax places a yaml.v3 error on its line, as an editor counts lines
// (internal/yamlerr); yaml.v3 gives no column.
func (r *reader) yamlSyntax(err error) error {
	msg := strings.TrimPrefix(yamlerr.Fix(err).Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, tail, ok := strings.Cut(rest, ": "); ok {
			if line, convErr := strconv.Atoi(n); convErr == nil {
				return &Error{File: r.name, Line: line, Msg: "invalid YAML: " + tail, Err: err}
			}
		}
	}
	return &Error{File: r.name, Msg: "invalid YAML: " + msg, Err: err}
}

func (r *reader) fromYAML(y *yaml.Node, path *ptr, depth int) (*node, error) {
	if r.budget--; r.budget < 0 {
		return nil, r.errAt(y.Line, y.Column, path, nil, "document expands to too many values (aliases)")
	}
	if depth >= maxDepth {
		return nil, r.errAt(y.Line, y.Column, path, nil, "nested deeper than %d", maxDepth)
	}
	n := &node{line: y.Line, col: y.Column}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return nil, r.errAt(0, 0, nil, nil, "empty document")
		}
		return r.fromYAML(y.Content[0], path, depth)
	case yaml.AliasNode:
		return r.fromYAML(y.Alias, path, depth+1)
	case yaml.SequenceNode:
		n.kind = '['
		for i, c := range y.Content {
			e, err := r.fromYAML(c, path.at(i), depth+1)
			if err != nil {
				return nil, err
			}
			n.elems = append(n.elems, e)
		}
	case yaml.MappingNode:
		n.kind = '{'
		seen := map[string]int{}
		for i := 0; i+1 < len(y.Content); i += 2 {
			k := y.Content[i]
			for k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				if k.ShortTag() == "!!merge" {
					return nil, r.errAt(k.Line, k.Column, path, nil, "merge key << is not allowed: write the keys out")
				}
				return nil, r.errAt(k.Line, k.Column, path, nil, "key %q is not a string: quote it", k.Value)
			}
			if err := r.checkKey(k.Value, nil, k.Line, k.Column, path, seen, n); err != nil {
				return nil, err
			}
			v, err := r.fromYAML(y.Content[i+1], path.key(k.Value), depth+1)
			if err != nil {
				return nil, err
			}
			seen[k.Value] = len(n.keys)
			n.keys = append(n.keys, key{name: k.Value, line: k.Line, col: k.Column})
			n.elems = append(n.elems, v)
		}
	case yaml.ScalarNode:
		// A scalar means what yaml.v3 decodes it to, written as JSON.
		var v any
		if err := y.Decode(&v); err != nil {
			return nil, r.errAt(y.Line, y.Column, path, err, "%v", err)
		}
		switch t := v.(type) {
		case nil:
			n.kind = '0'
		case bool:
			n.kind, n.b = 't', t
		case string:
			// A !!binary scalar may decode to bytes that are not UTF-8, which JSON
			// would turn into U+FFFD.
			if !utf8.ValidString(t) {
				return nil, r.errAt(y.Line, y.Column, path, nil, "string is not UTF-8")
			}
			n.kind, n.str = 's', t
		default: // numbers and timestamps
			b, err := json.Marshal(v)
			if err != nil {
				return nil, r.errAt(y.Line, y.Column, path, err, "value %q has no JSON form", y.Value)
			}
			n.kind, n.str = 'n', string(b)
			if b[0] == '"' {
				n.kind = 's'
				if err := json.Unmarshal(b, &n.str); err != nil {
					return nil, r.errAt(y.Line, y.Column, path, err, "%v", err)
				}
			}
		}
	default:
		return nil, r.errAt(y.Line, y.Column, path, nil, "unexpected YAML node")
	}
	return n, nil
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// finish checks the tree's keys against v's type, then decodes it into v.
func (r *reader) finish(root *node, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("document: decode into %T: want a non-nil pointer", v)
	}
	if err := r.checkFields(root, rv.Type().Elem(), nil); err != nil {
		return err
	}
	var buf bytes.Buffer
	r.encode(&buf, root, nil)
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	// Every key matched a field exactly; refusing unknown ones again costs nothing.
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return r.decodeError(err)
	}
	return nil
}

// opaque reports whether values of t take any keys: interfaces, raw messages and
// types that decode themselves.
func opaque(t reflect.Type) bool {
	if t == nil || t.Kind() == reflect.Interface || t == rawMessageType {
		return true
	}
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textType) || reflect.PointerTo(t).Implements(textType)
}

// checkFields refuses a key that is not exactly a field of the struct it decodes
// into. t nil means any keys.
func (r *reader) checkFields(n *node, t reflect.Type, path *ptr) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if opaque(t) {
		t = nil
	}
	switch n.kind {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i, e := range n.elems {
			if err := r.checkFields(e, elem, path.at(i)); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t == nil:
		case t.Kind() == reflect.Struct:
			fields = map[string]reflect.Type{}
			structFields(t, fields)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		for i, k := range n.keys {
			ft := elem
			if fields != nil {
				var ok bool
				if ft, ok = fields[k.name]; !ok {
					msg := fmt.Sprintf("unknown field %q", k.name)
					if s := suggest(k.name, fields); s != "" {
						msg += fmt.Sprintf(" (did you mean %q?)", s)
					}
					return r.errAt(k.line, k.col, path, nil, "%s", msg)
				}
			}
			if err := r.checkFields(n.elems[i], ft, path.key(k.name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// structFields collects the JSON names of t's fields as encoding/json sees them,
// embedded structs' fields included.
func structFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				structFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := out[name]; !ok {
			out[name] = f.Type
		}
	}
}

// suggest returns the field a mistyped key most likely meant: the same letters in
// another case, or without '_' and '-'.
func suggest(k string, fields map[string]reflect.Type) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	var best string
	for f := range fields {
		if norm(f) == norm(k) && (best == "" || f < best) {
			best = f
		}
	}
	return best
}

// encode writes the tree as JSON, noting where each value starts.
func (r *reader) encode(buf *bytes.Buffer, n *node, path *ptr) {
	r.spans = append(r.spans, span{off: buf.Len(), n: n, path: path})
	switch n.kind {
	case '{':
		buf.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k.name)
			buf.WriteByte(':')
			r.encode(buf, n.elems[i], path.key(k.name))
		}
		buf.WriteByte('}')
	case '[':
		buf.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				buf.WriteByte(',')
			}
			r.encode(buf, e, path.at(i))
		}
		buf.WriteByte(']')
	case 's':
		writeString(buf, n.str)
	case 'n':
		buf.WriteString(n.str)
	case 't':
		buf.WriteString(strconv.FormatBool(n.b))
	default:
		buf.WriteString("null")
	}
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always encodes
	buf.Write(b)
}

// decodeError places a decoding error (a value of the wrong type) on the value of
// the document it came from.
func (r *reader) decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// The offset is just past the value, or just inside an object or array: the
		// last value starting before it is the one.
		i := sort.Search(len(r.spans), func(i int) bool { return int64(r.spans[i].off) >= te.Offset }) - 1
		if i >= 0 {
			s := r.spans[i]
			return r.errAt(s.n.line, s.n.col, s.path, err, "cannot decode %s into %s", te.Value, te.Type)
		}
	}
	return &Error{File: r.name, Msg: err.Error(), Err: err}
}
