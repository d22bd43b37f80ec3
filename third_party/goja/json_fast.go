package goja

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/dop251/goja/unistring"
)

// jsonParser parses valid JSON text straight into values (scripthost patch).
// encoding/json's Decoder.Token allocates a SyntaxError for every scalar it reads;
// this parser allocates only the values. It gives up (ok false) on anything it does
// not accept, invalid text included, and the caller then runs the Decoder-based
// parser, so errors and edge cases read exactly as before.
type jsonParser struct {
	r   *Runtime
	s   string
	pos int
}

func (r *Runtime) parseJSONFast(text string) (Value, bool) {
	p := jsonParser{r: r, s: text}
	v, ok := p.value()
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.pos == len(p.s)
}

func (p *jsonParser) space() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value() (Value, bool) {
	p.r.jsonValue() // scripthost patch: see jsonValue
	p.space()
	if p.pos >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, ok := p.str()
		if !ok {
			return nil, false
		}
		p.r.charge(jsonValueBytes + int64(len(s))) // scripthost patch: see jsonValue
		return newStringValue(s), true
	case c == 't':
		return valueTrue, p.literal("true")
	case c == 'f':
		return valueFalse, p.literal("false")
	case c == 'n':
		return _null, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *jsonParser) literal(lit string) bool {
	if len(p.s)-p.pos >= len(lit) && p.s[p.pos:p.pos+len(lit)] == lit {
		p.pos += len(lit)
		return true
	}
	return false
}

func (p *jsonParser) object() (Value, bool) {
	// scripthost patch: see jsonValue
	p.r.charge(jsonObjectBytes)
	p.pos++ // {
	obj := p.r.NewObject()
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return obj, true
	}
	for {
		p.space()
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return nil, false
		}
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.r.charge(jsonPropertyBytes + int64(len(key))) // scripthost patch: see jsonValue
		p.space()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, false
		}
		p.pos++
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		obj.self._putProp(unistring.NewFromString(key), v, true, true, true)
		p.space()
		if p.pos >= len(p.s) {
			return nil, false
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, true
		default:
			return nil, false
		}
	}
}

func (p *jsonParser) array() (Value, bool) {
	// scripthost patch: see jsonValue
	p.r.charge(jsonArrayBytes)
	p.pos++ // [
	var values []Value
	p.space()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return p.r.newArrayValues(values), true
	}
	for {
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		values = p.r.jsonAppend(values, v) // scripthost patch: see jsonAppend
		p.space()
		if p.pos >= len(p.s) {
			return nil, false
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return p.r.newArrayValues(values), true
		default:
			return nil, false
		}
	}
}

// str reads a string; one with escapes or non-ASCII bytes is decoded by
// encoding/json, as the Decoder would.
func (p *jsonParser) str() (string, bool) {
	start := p.pos
	p.pos++ // "
	simple := true
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '"':
			p.pos++
			if simple {
				return p.s[start+1 : p.pos-1], true
			}
			var s string
			if json.Unmarshal([]byte(p.s[start:p.pos]), &s) != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			simple = false
			p.pos += 2
			continue
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			simple = false
		}
		p.pos++
	}
	return "", false
}

func (p *jsonParser) number() (Value, bool) {
	start := p.pos
	if p.s[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.s) && p.s[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, false
	}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
	if err != nil {
		return nil, false
	}
	return floatToValue(f), true
}
