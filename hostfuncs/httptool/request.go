package httptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// bodyMode is how the input becomes the request body.
type bodyMode string

const (
	// bodyJSON sends the fields the URL does not take as a JSON object.
	bodyJSON bodyMode = "json"
	// bodyForm sends them form-encoded (encodeForm).
	bodyForm bodyMode = "form"
	// bodyQuery sends no body: the fields go form-encoded into the query string.
	bodyQuery bodyMode = "query"
	// bodyRaw sends one string field as it is, with the declared content type.
	bodyRaw bodyMode = "raw"
	// bodyNone sends no body.
	bodyNone bodyMode = "none"
)

// outgoing is one request ready to send.
type outgoing struct {
	method      string
	url         string
	body        []byte // nil: no body
	contentType string
	header      http.Header // filled from the input, over the declared headers
}

// request builds the tool's request for an input: the URL template takes its fields,
// the body the rest (and the URL's fields listed in repeat_in_body). The same input and
// key always give the same request, byte for byte, so that a replay is the first
// request again.
func (h *httpTool) request(input json.RawMessage, key string) (outgoing, error) {
	fields, err := inputFields(input)
	if err != nil {
		return outgoing{}, err
	}
	u, err := h.url.expand(fields, key)
	if err != nil {
		return outgoing{}, err
	}
	o := outgoing{method: h.method, url: u, contentType: h.contentType}
	for name, tmpl := range h.headerTmpl {
		v, err := fill(headerFieldRE, tmpl, "header "+name, fields, key, func(s string) string { return s }, nil)
		if err != nil {
			return outgoing{}, err
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return outgoing{}, fmt.Errorf("header %s: the value from the input is not a valid header value (control characters)", name)
		}
		if o.header == nil {
			o.header = http.Header{}
		}
		o.header.Set(name, v)
	}
	isObject := fields != nil || len(bytes.TrimSpace(input)) == 0
	rest := map[string]any{}
	for k, v := range fields {
		if !h.placed[k] {
			rest[k] = v
		}
	}
	switch h.body {
	case bodyNone:
		return o, nil
	case bodyJSON:
		if !isObject {
			// Not an object: no fields for the URL to take; sent as it is.
			o.body = bytes.TrimSpace(input)
			return o, nil
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rest); err != nil {
			return outgoing{}, fmt.Errorf("JSON body: %w", err)
		}
		o.body = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	case bodyForm, bodyQuery:
		if !isObject {
			return outgoing{}, fmt.Errorf("form body: the input must be an object")
		}
		s, err := encodeForm(rest)
		if err != nil {
			return outgoing{}, err
		}
		if h.body == bodyForm {
			o.body = []byte(s)
		} else if s != "" {
			o.url += "?" + s
		}
	case bodyRaw:
		s, ok := fields[h.bodyField].(string)
		if !ok {
			return outgoing{}, fmt.Errorf("raw body: input field %q must be a string", h.bodyField)
		}
		delete(rest, h.bodyField)
		if len(rest) > 0 {
			extra := make([]string, 0, len(rest))
			for k := range rest {
				extra = append(extra, k)
			}
			sort.Strings(extra)
			return outgoing{}, fmt.Errorf("raw body: input fields %s have no place in the request (the url and headers take %s, the body only %q)",
				strings.Join(extra, ", "), h.placedList(), h.bodyField)
		}
		o.body = []byte(s)
	}
	return o, nil
}

func (h *httpTool) placedList() string {
	if len(h.placed) == 0 {
		return "none"
	}
	var out []string
	for k := range h.placed {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
