package hostfuncs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Redacted is the text that replaces a secret.
const Redacted = "[REDACTED]"

// MinSecretLen is the shortest secret a tool declaration accepts (CheckSecret): a
// shorter value is too easily ordinary text, so it can be neither found reliably in
// what is stored and shown nor replaced there without mangling it.
const MinSecretLen = 8

// minSubstring is the shortest registered secret replaced wherever it occurs. A shorter
// one (which reaches a Redactor from a call's secret fields, or a caller that does not
// check) is replaced only where it stands alone: a whole JSON string value, or a word
// of text; replacing every "ab" inside other words would blank out ordinary text.
const minSubstring = 4

// CheckSecret refuses a secret shorter than MinSecretLen (after trimming white space),
// with an error that gives its length, never the value.
func CheckSecret(v string) error {
	if n := len(strings.TrimSpace(v)); n < MinSecretLen {
		return fmt.Errorf("hostfuncs: a secret of %d characters is shorter than %d: it cannot be told apart from ordinary text, so it could not be kept out of what is logged, stored and shown", n, MinSecretLen)
	}
	return nil
}

// Redactor removes secrets from text and JSON before it is logged, stored or shown. It
// knows three kinds of secret: values registered with AddSecret (an API key read from
// the environment), values under keys that name a secret ("password", "api_key",
// "Authorization", …), and strings in common credential formats (bearer tokens, AWS
// access keys, GitHub, Slack and Stripe tokens, JWTs, PEM private keys, passwords and
// keys in URLs). A Redactor is safe for concurrent use; a nil *Redactor applies the
// patterns only.
type Redactor struct {
	mu       sync.RWMutex
	secrets  map[string]struct{}
	replacer *strings.Replacer // rebuilt when secrets change; nil when there are none
	// short are the secrets shorter than minSubstring, replaced where they stand
	// alone: word matches them as a word of text (nil when there are none).
	short map[string]struct{}
	word  *regexp.Regexp
}

// NewRedactor returns a Redactor that knows the given secret values.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{secrets: map[string]struct{}{}}
	r.AddSecret(secrets...)
	return r
}

// AddSecret registers secret values. Each is also registered in its URL-escaped forms,
// so that a secret placed in a URL is found too. A value shorter than minSubstring
// (after trimming white space) is replaced only where it stands alone (a whole string
// value, a word of text); an empty one is ignored.
func (r *Redactor) AddSecret(values ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		r.secrets = map[string]struct{}{}
	}
	changed := false
	for _, v := range values {
		if n := len(strings.TrimSpace(v)); n == 0 {
			continue
		} else if n < minSubstring {
			if r.short == nil {
				r.short = map[string]struct{}{}
			}
			if _, ok := r.short[v]; !ok {
				r.short[v] = struct{}{}
				changed = true
			}
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v), jsonEscaped(v)} {
			if _, ok := r.secrets[form]; !ok {
				r.secrets[form] = struct{}{}
				changed = true
			}
		}
	}
	if changed {
		r.rebuild()
	}
}

// jsonEscaped returns v as it appears inside a JSON string literal.
func jsonEscaped(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// rebuild makes the replacer, longest secrets first so that a secret containing
// another is replaced whole. r.mu must be held.
func (r *Redactor) rebuild() {
	list := make([]string, 0, len(r.secrets))
	for s := range r.secrets {
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool {
		if len(list[i]) != len(list[j]) {
			return len(list[i]) > len(list[j])
		}
		return list[i] < list[j]
	})
	pairs := make([]string, 0, 2*len(list))
	for _, s := range list {
		pairs = append(pairs, s, Redacted)
	}
	r.replacer = nil
	if len(pairs) > 0 {
		r.replacer = strings.NewReplacer(pairs...)
	}
	r.word = nil
	if len(r.short) > 0 {
		alts := make([]string, 0, len(r.short))
		for v := range r.short {
			alts = append(alts, regexp.QuoteMeta(v))
		}
		sort.Sort(sort.Reverse(sort.StringSlice(alts)))
		r.word = regexp.MustCompile(`(^|[^\pL\pN_])(?:` + strings.Join(alts, "|") + `)([^\pL\pN_]|$)`)
	}
}

// replaceWords replaces the short secrets standing as words of s. Adjacent matches
// share a boundary character, so the replacement runs until nothing changes.
func replaceWords(re *regexp.Regexp, s string) string {
	for range 4 {
		out := re.ReplaceAllString(s, "${1}"+Redacted+"${2}")
		if out == s {
			break
		}
		s = out
	}
	return s
}

// pattern is one credential format and its replacement (which may keep a prefix).
// hints are lower-case substrings one of which every match contains: a text with none
// of them skips the regular expression, which keeps Redact cheap on ordinary text.
type pattern struct {
	re    *regexp.Regexp
	repl  string
	hints []string
}

// kvHints are the substrings of every key that the key=value patterns match.
var kvHints = []string{"pass", "secret", "token", "key", "authorization", "credential", "cookie", "sig", "pwd"}

// secretWords are the words that make a key name a secret. Keys are compared
// lower-cased with '-' and '_' removed.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey", "authorization",
	"accesskey", "privatekey", "credential", "cookie", "signature", "sessionid",
}

const secretKeyRE = `[a-z0-9_-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|authorization|access[_-]?key|private[_-]?key|credential|cookie)[a-z0-9_-]*`

// patterns are applied in order; earlier ones may already have replaced part of a match
// of a later one, which is why the replacement text contains no characters the later
// patterns consume.
var patterns = []pattern{
	// PEM private key blocks, whole.
	{regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`), Redacted, []string{"private key"}},
	// "password": "..." in JSON text (an echoed request body in an error message).
	{regexp.MustCompile(`(?i)("` + secretKeyRE + `"\s*:\s*")(?:[^"\\]|\\.)*(")`), "${1}" + Redacted + "${2}", kvHints},
	// Authorization: <scheme> <credentials> in header dumps.
	{regexp.MustCompile(`(?i)\b((?:proxy-)?authorization\s*[:=]\s*)(?:(?:bearer|basic|token|digest)\s+)?[^\s",;]+`), "${1}" + Redacted, []string{"authorization"}},
	// Bearer tokens anywhere.
	{regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*`), "${1}" + Redacted, []string{"bearer"}},
	// JSON Web Tokens.
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`), Redacted, []string{"eyj"}},
	// AWS access key ids.
	{regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), Redacted, []string{"akia", "asia"}},
	// GitHub tokens.
	{regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}\b`), Redacted, []string{"gh"}},
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}\b`), Redacted, []string{"github_pat_"}},
	// Slack tokens.
	{regexp.MustCompile(`\bxox[baprs]-[A-Za-z0-9-]{10,}`), Redacted, []string{"xox"}},
	// Stripe secret and restricted keys.
	{regexp.MustCompile(`\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}\b`), Redacted, []string{"k_live_", "k_test_"}},
	// user:password@ in URLs.
	{regexp.MustCompile(`(://[^/\s:@]+:)[^/\s@]+@`), "${1}" + Redacted + "@", []string{"://"}},
	// password=, token=, key=, … in query strings, form bodies and free text.
	{regexp.MustCompile(`(?i)\b((?:` + secretKeyRE + `|key|sig|pwd)=)[^&\s"'#]+`), "${1}" + Redacted, kvHints},
	// password: value in free text ("password: hunter2").
	{regexp.MustCompile(`(?i)\b((?:password|passwd|passphrase|secret|api[_-]?key|token)\s*:\s*)[^\s",;]+`), "${1}" + Redacted, kvHints},
}

// Redact returns s with every registered secret and every known credential format
// replaced by Redacted.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	s = r.replaceSecrets(s)
	lower := strings.ToLower(s)
	for _, p := range patterns {
		if !containsAny(lower, p.hints) {
			continue
		}
		if out := p.re.ReplaceAllString(s, p.repl); out != s {
			s, lower = out, strings.ToLower(out)
		}
	}
	return s
}

// replaceSecrets returns s with r's registered secrets replaced by Redacted, leaving
// credential formats to Redact. A nil r knows none.
func (r *Redactor) replaceSecrets(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	rep, word := r.replacer, r.word
	r.mu.RUnlock()
	if rep != nil {
		s = rep.Replace(s)
	}
	if word != nil {
		s = replaceWords(word, s)
	}
	return s
}

// RedactJSON returns a copy of raw with the values of secret-looking keys replaced by
// Redacted (strings, objects and arrays; numbers, booleans and null are kept) and every
// other string redacted like Redact. Object keys come out sorted. Input that is not JSON
// is redacted as text.
func (r *Redactor) RedactJSON(raw json.RawMessage) json.RawMessage {
	return r.redactJSON(raw, nil)
}

// redactJSON is RedactJSON with extra field names to treat as secret.
func (r *Redactor) redactJSON(raw json.RawMessage, fields []string) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return json.RawMessage(r.Redact(string(raw)))
	}
	v = r.redactValue(v, fields)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(r.Redact(string(raw)))
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n"))
}

// redactValue is redactJSON of a decoded value, which it changes in place: the values
// of secret-looking keys (strings, objects and arrays) and of the extra fields (any
// value) are replaced, and every string is redacted.
func (r *Redactor) redactValue(v any, fields []string) any {
	extra := make(map[string]bool, len(fields))
	for _, f := range fields {
		extra[f] = true
	}
	return r.walk(v, extra)
}

func (r *Redactor) walk(v any, extra map[string]bool) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if extra[k] {
				// A field the tool declares secret, whatever its value's type.
				t[k] = Redacted
				continue
			}
			if IsSecretKey(k) {
				switch e.(type) {
				case string, map[string]any, []any:
					t[k] = Redacted
					continue
				}
			}
			t[k] = r.walk(e, extra)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = r.walk(e, extra)
		}
		return t
	case string:
		return r.Redact(t)
	}
	return v
}

var keySeparators = strings.NewReplacer("-", "", "_", "", " ", "")

// IsSecretKey reports whether a field or header name looks like it holds a secret:
// compared case-insensitively and ignoring '-' and '_', it contains one of password,
// passwd, passphrase, secret, token, apikey, authorization, accesskey, privatekey,
// credential, cookie, signature or sessionid.
func IsSecretKey(name string) bool {
	n := keySeparators.Replace(strings.ToLower(name))
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactSecrets returns raw with every registered secret value replaced in its strings
// (keys included). Unlike RedactJSON it leaves secret-looking keys and credential
// formats alone: it is for tool results, which the script and the next phase must see
// as the service sent them, less the host's own secrets. Input that is not JSON is
// returned with the secrets replaced as text.
func (r *Redactor) RedactSecrets(raw json.RawMessage) json.RawMessage {
	if r == nil || len(raw) == 0 {
		return raw
	}
	r.mu.RLock()
	rep, short := r.replacer, r.short
	r.mu.RUnlock()
	if rep == nil && len(short) == 0 {
		return raw
	}
	if rep == nil {
		rep = strings.NewReplacer()
	}
	if text := rep.Replace(string(raw)); text == string(raw) && len(short) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return json.RawMessage(rep.Replace(string(raw)))
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, e := range t {
				out[rep.Replace(k)] = walk(e)
			}
			return out
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
			return t
		case string:
			if _, ok := short[t]; ok {
				return Redacted
			}
			return rep.Replace(t)
		}
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		return json.RawMessage(rep.Replace(string(raw)))
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n"))
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
