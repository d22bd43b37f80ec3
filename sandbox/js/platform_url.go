package js

import (
	"strings"

	"github.com/dop251/goja"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// URLs are parsed by github.com/nlnwa/whatwg-url, an implementation of the WHATWG URL
// Standard that passes the web-platform-tests URL suite; this file only maps its API
// onto the record platform.js keeps for each URL object.

// urlRecord is [href, origin, protocol, username, password, host, hostname, port,
// pathname, search, hash].
func urlRecord(u *whatwg.Url) []any {
	return []any{u.Href(false), urlOrigin(u), u.Protocol(), u.Username(), u.Password(), u.Host(), u.Hostname(),
		u.Port(), u.Pathname(), u.Search(), u.Hash()}
}

// urlOrigin serializes a URL's origin: scheme://host[:port] for the special schemes
// that have one, the origin of the inner URL for blob:, "null" otherwise.
func urlOrigin(u *whatwg.Url) string {
	switch u.Scheme() {
	case "http", "https", "ws", "wss", "ftp":
		return u.Protocol() + "//" + u.Host()
	case "blob":
		if inner, err := whatwg.Parse(u.Pathname()); err == nil && (inner.Scheme() == "http" || inner.Scheme() == "https") {
			return urlOrigin(inner)
		}
	}
	return "null"
}

func (p *platform) installURL(set func(string, any)) {
	// urlParse returns the record of input resolved against base, or a message saying
	// why it is not a URL.
	set("urlParse", func(input string, baseV goja.Value) any {
		if baseV == nil || goja.IsUndefined(baseV) {
			u, err := whatwg.Parse(input)
			if err != nil {
				return "Invalid URL " + quoteJS(input) + ": " + urlReason(err)
			}
			return urlRecord(u)
		}
		base := baseV.String()
		b, err := whatwg.Parse(base)
		if err != nil {
			return "Invalid base URL " + quoteJS(base) + ": " + urlReason(err)
		}
		u, err := b.Parse(input)
		if err != nil {
			return "Invalid URL " + quoteJS(input) + " against base " + quoteJS(base) + ": " + urlReason(err)
		}
		return urlRecord(u)
	})
	// urlSet applies one setter to the URL href and returns the new record (a setter
	// that does not apply leaves the URL as it was, as the standard says), or a
	// message when href itself is set to something that is not a URL.
	set("urlSet", func(href, field, v string) any {
		u, err := whatwg.Parse(href)
		if err != nil {
			return "Invalid URL " + quoteJS(href)
		}
		switch field {
		case "href":
			n, err := whatwg.Parse(v)
			if err != nil {
				return "Invalid URL " + quoteJS(v) + ": " + urlReason(err)
			}
			u = n
		case "protocol":
			u.SetProtocol(v)
		case "username":
			u.SetUsername(v)
		case "password":
			u.SetPassword(v)
		case "host":
			u.SetHost(v)
		case "hostname":
			u.SetHostname(v)
		case "port":
			u.SetPort(v)
		case "pathname":
			u.SetPathname(v)
		case "search", "query":
			u.SetSearch(v)
		case "hash":
			u.SetHash(v)
		}
		return urlRecord(u)
	})
	set("formParse", func(s string) []any { return formParse(s) })
	set("formSerialize", func(list []string) string { return formSerialize(list) })
	// usv converts a value to a string the way WebIDL's USVString does: lone surrogates
	// become U+FFFD (goja's conversion to Go does exactly that).
	set("usv", func(s string) string { return s })
}

// urlReason is the parser's error without its package prefix.
func urlReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		return msg[i+2:]
	}
	return msg
}

// quoteJS quotes s for a message, shortened past 200 bytes.
func quoteJS(s string) string {
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return `"` + s + `"`
}

// formParse parses application/x-www-form-urlencoded text into [name, value, ...].
func formParse(s string) []any {
	var out []any
	for _, seq := range strings.Split(s, "&") {
		if seq == "" {
			continue
		}
		name, value, _ := strings.Cut(seq, "=")
		out = append(out, formDecode(name), formDecode(value))
	}
	if out == nil {
		out = []any{}
	}
	return out
}

// formDecode replaces + with a space, percent-decodes and decodes the bytes as UTF-8
// with replacement.
func formDecode(s string) string {
	if !strings.ContainsAny(s, "+%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	var d utf8Decoder
	return d.decode(b, false)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// formSerialize encodes [name, value, ...] as application/x-www-form-urlencoded.
func formSerialize(list []string) string {
	var b strings.Builder
	for i := 0; i+1 < len(list); i += 2 {
		if i > 0 {
			b.WriteByte('&')
		}
		formEncode(&b, list[i])
		b.WriteByte('=')
		formEncode(&b, list[i+1])
	}
	return b.String()
}

func formEncode(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte('+')
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '*', c == '-', c == '.', c == '_':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
}
