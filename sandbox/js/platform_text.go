package js

import (
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
	xtransform "golang.org/x/text/transform"
)

// Text: atob/btoa (the HTML standard's forgiving base64), TextEncoder (UTF-8) and
// TextDecoder (the WHATWG Encoding Standard's labels through x/text's htmlindex; UTF-8
// decoded here, following the standard's decoder exactly: one U+FFFD per maximal
// invalid subsequence, BOM handling, streaming).

func (p *platform) installText(set func(string, any)) {
	set("btoa", func(s string) string {
		b := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 0xFF {
				p.throwDOM("InvalidCharacterError", "btoa: the string contains a character outside Latin-1 (U+%04X)", r)
			}
			b = append(b, byte(r))
		}
		return base64.StdEncoding.EncodeToString(b)
	})
	set("atob", func(s string) string {
		b, ok := forgivingBase64(s)
		if !ok {
			p.throwDOM("InvalidCharacterError", "atob: the string is not correctly encoded base64")
		}
		// Each byte becomes the character with that code (a "binary string").
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return string(r)
	})
	set("base64url", func(s string) goja.Value {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
		if err != nil {
			p.throwDOM("DataError", "the JWK's k is not base64url")
		}
		return p.buffer(b)
	})
	set("base64urlEncode", func(v goja.Value) string { return base64.RawURLEncoding.EncodeToString(p.bytesOf(v)) })
	set("copy", func(v goja.Value) goja.Value { return p.buffer(append([]byte(nil), p.bytesOf(v)...)) })
	set("utf8Encode", func(v goja.Value) goja.Value {
		// Converting the string makes its UTF-8 twice over (a Go string, then the
		// buffer's bytes), up to three bytes per UTF-16 unit: the budget is asked
		// before either is made.
		if s, ok := v.(goja.String); ok {
			p.in.vm.Charge(3 * int64(s.Length()))
		}
		return p.buffer([]byte(v.String()))
	})
	set("encodeInto", func(call goja.FunctionCall) goja.Value {
		src := call.Argument(0).String()
		dst := p.bytesOf(call.Argument(1))
		read, written := 0, 0
		for _, r := range src {
			n := utf8.RuneLen(r)
			if written+n > len(dst) {
				break
			}
			utf8.EncodeRune(dst[written:], r)
			written += n
			read++
			if r > 0xFFFF {
				read++ // two UTF-16 code units
			}
		}
		return p.in.vm.ToValue([]any{read, written})
	})
	set("newDecoder", func(label string, fatal, ignoreBOM bool) []any {
		name, dec := p.newDecoder(label, fatal, ignoreBOM)
		return []any{name, dec}
	})
}

// forgivingBase64 decodes s as the HTML standard's forgiving-base64 decode does:
// ASCII whitespace is ignored, padding is optional but must be right when present.
func forgivingBase64(s string) ([]byte, bool) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\f', '\r', ' ':
			return -1
		}
		return r
	}, s)
	if len(s)%4 == 0 && strings.HasSuffix(s, "=") {
		s = strings.TrimSuffix(s, "=")
		s = strings.TrimSuffix(s, "=")
	}
	if len(s)%4 == 1 || strings.ContainsRune(s, '=') {
		return nil, false
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		// RawStdEncoding is strict about the unused bits of the last character; the
		// standard discards them.
		if len(s)%4 != 0 {
			if b2, ok := decodeLoose(s); ok {
				return b2, true
			}
		}
		return nil, false
	}
	return b, true
}

// decodeLoose decodes unpadded base64 whose last character has non-zero unused bits.
func decodeLoose(s string) ([]byte, bool) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var out []byte
	var buf, bits uint
	for i := 0; i < len(s); i++ {
		v := strings.IndexByte(alphabet, s[i])
		if v < 0 {
			return nil, false
		}
		buf = buf<<6 | uint(v)
		bits += 6
		if bits >= 8 {
			bits -= 8
			out = append(out, byte(buf>>bits))
		}
	}
	return out, true
}

// newDecoder returns the encoding's name and the decode(bytes, stream) function of a
// TextDecoder, or throws a RangeError for an unknown label.
func (p *platform) newDecoder(label string, fatal, ignoreBOM bool) (string, func(goja.Value, bool) string) {
	enc, err := htmlindex.Get(strings.TrimSpace(label))
	if err != nil {
		p.throwRange("TextDecoder: the encoding label %q is not supported", label)
	}
	name, _ := htmlindex.Name(enc)
	if name == "replacement" {
		p.throwRange("TextDecoder: the encoding label %q is not supported", label)
	}
	if name == "utf-8" {
		d := &utf8Decoder{fatal: fatal, ignoreBOM: ignoreBOM}
		return name, func(v goja.Value, stream bool) string {
			s := d.decode(p.bytesOf(v), stream)
			if d.failed {
				d.reset()
				p.throwType("TextDecoder: the data is not valid utf-8")
			}
			return s
		}
	}
	d := &xDecoder{enc: enc, name: name, ignoreBOM: ignoreBOM}
	return name, func(v goja.Value, stream bool) string {
		s, ok := d.decode(p.bytesOf(v), stream)
		if !ok || fatal && strings.ContainsRune(s, utf8.RuneError) {
			d.reset()
			p.throwType("TextDecoder: the data is not valid %s", name)
		}
		return s
	}
}

// utf8Decoder is the Encoding Standard's UTF-8 decoder with its BOM handling.
type utf8Decoder struct {
	fatal, ignoreBOM bool
	failed           bool

	need, seen int
	cp         rune
	lower      byte
	upper      byte
	pending    []byte // bytes of the sequence in progress
	bomSeen    bool
	started    bool // some output or a BOM check happened in this stream
}

func (d *utf8Decoder) reset() {
	fatal, ignoreBOM := d.fatal, d.ignoreBOM
	*d = utf8Decoder{fatal: fatal, ignoreBOM: ignoreBOM}
}

// decode decodes b; with stream set an incomplete sequence at the end waits for more.
func (d *utf8Decoder) decode(b []byte, stream bool) string {
	var out strings.Builder
	out.Grow(len(b))
	bad := func() {
		if d.fatal {
			d.failed = true
		}
		out.WriteRune(utf8.RuneError)
	}
	if d.lower == 0 {
		d.lower, d.upper = 0x80, 0xBF
	}
	for i := 0; i < len(b) && !d.failed; i++ {
		c := b[i]
		if d.need == 0 {
			switch {
			case c <= 0x7F:
				out.WriteByte(c)
			case c >= 0xC2 && c <= 0xDF:
				d.need, d.cp = 1, rune(c&0x1F)
			case c >= 0xE0 && c <= 0xEF:
				if c == 0xE0 {
					d.lower = 0xA0
				}
				if c == 0xED {
					d.upper = 0x9F
				}
				d.need, d.cp = 2, rune(c&0xF)
			case c >= 0xF0 && c <= 0xF4:
				if c == 0xF0 {
					d.lower = 0x90
				}
				if c == 0xF4 {
					d.upper = 0x8F
				}
				d.need, d.cp = 3, rune(c&0x7)
			default:
				bad()
			}
			continue
		}
		if c < d.lower || c > d.upper {
			d.need, d.seen, d.cp, d.lower, d.upper = 0, 0, 0, 0x80, 0xBF
			bad()
			i-- // the byte starts over
			continue
		}
		d.lower, d.upper = 0x80, 0xBF
		d.cp = d.cp<<6 | rune(c&0x3F)
		d.seen++
		if d.seen == d.need {
			out.WriteRune(d.cp)
			d.need, d.seen, d.cp = 0, 0, 0
		}
	}
	if !stream {
		if d.need != 0 && !d.failed {
			bad()
		}
		d.need, d.seen, d.cp, d.lower, d.upper = 0, 0, 0, 0x80, 0xBF
	}
	s := out.String()
	if !d.ignoreBOM && !d.bomSeen && len(s) > 0 {
		d.bomSeen = true
		s = strings.TrimPrefix(s, "\uFEFF")
	}
	if !stream {
		d.bomSeen = false
	}
	return s
}

// xDecoder decodes the other encodings with x/text.
type xDecoder struct {
	enc       encoding.Encoding
	name      string
	ignoreBOM bool
	t         xtransform.Transformer
	rest      []byte
	started   bool
}

func (d *xDecoder) reset() { d.t, d.rest, d.started = nil, nil, false }

func (d *xDecoder) decode(b []byte, stream bool) (string, bool) {
	if d.t == nil {
		d.t = d.enc.NewDecoder()
	}
	src := append(d.rest, b...)
	dst := make([]byte, 0, 3*len(src)+16)
	buf := make([]byte, 4096)
	for {
		n, m, err := d.t.Transform(buf, src, !stream)
		dst = append(dst, buf[:n]...)
		src = src[m:]
		if err == xtransform.ErrShortDst {
			continue
		}
		if err == xtransform.ErrShortSrc && stream {
			break
		}
		if err != nil {
			return "", false
		}
		break
	}
	d.rest = append([]byte(nil), src...)
	s := string(dst)
	if !d.started && len(s) > 0 {
		d.started = true
		if !d.ignoreBOM {
			s = strings.TrimPrefix(s, "\uFEFF")
		}
	}
	if !stream {
		d.reset()
	}
	return s, true
}
