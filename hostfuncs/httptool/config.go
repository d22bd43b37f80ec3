package httptool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/internal/document"
)

// DefaultTimeout bounds one request when a tool declares none.
const DefaultTimeout = 30 * time.Second

// config is one tool as declared in the file.
type config struct {
	Namespace    string            `json:"namespace"`
	Method       string            `json:"method"`
	Description  string            `json:"description"`
	URL          string            `json:"url"`
	HTTPMethod   string            `json:"http_method"`
	Headers      map[string]string `json:"headers"`
	Body         string            `json:"body"`
	ContentType  string            `json:"content_type"`
	BodyField    string            `json:"body_field"`
	RepeatInBody []string          `json:"repeat_in_body"`
	InputSchema  json.RawMessage   `json:"input_schema"`
	OutputSchema json.RawMessage   `json:"output_schema"`
	ReadOnly     bool              `json:"read_only"`
	Timeout      string            `json:"timeout"`
	Reconcile    *reconcileConfig  `json:"reconcile"`
	SecretFields []string          `json:"secret_fields"`
}

type reconcileConfig struct {
	Strategy string `json:"strategy"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	Settle   string `json:"settle"`
}

var (
	httpMethods   = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead}
	placeholderRE = regexp.MustCompile(`\{([^{}]*)\}`)
	fieldRE       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envRE         = regexp.MustCompile(`\$\{([^{}]*)\}`)
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// headerFieldRE finds {field} in a header value; other braces are text there.
	headerFieldRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// Load reads the tool declarations in path (".json", ".yaml" or ".yml") and returns the
// tools. The file is a list of tools, or an object whose "tools" field is one. Header
// values and the path and query of a URL may name environment variables as ${NAME},
// looked up with env (nil means os.LookupEnv); their values are secrets, carried in
// each tool's Secrets so that a ToolWrapper redacts them, and are never part of an
// error message. Every error names the file and, when it is about one tool, the tool;
// one about a ${NAME} reference also the line and column of its first use in the file.
func Load(path string, env func(string) (string, bool)) ([]*hostfuncs.Tool, error) {
	if env == nil {
		env = os.LookupEnv
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("httptool: %w", err)
	}
	list, err := decode(path, data)
	if err != nil {
		return nil, err
	}
	var tools []*hostfuncs.Tool
	names := map[string]bool{}
	for i, c := range list {
		name := toolName(i, c)
		t, err := c.tool(env)
		var ee *envError
		if errors.As(err, &ee) {
			if line, col := refLine(data, ee.ref); line > 0 {
				return nil, fmt.Errorf("httptool: %s:%d:%d: tool %s: %w", path, line, col, name, err)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("httptool: %s: tool %s: %w", path, name, err)
		}
		if names[t.Name()] {
			return nil, fmt.Errorf("httptool: %s: tool %s: declared twice", path, name)
		}
		names[t.Name()] = true
		tools = append(tools, t)
	}
	return tools, nil
}

// toolFile is the object form of a tools file.
type toolFile struct {
	Tools []config `json:"tools"`
}

// decode reads the file by its extension, strictly (internal/document): a key twice,
// a key that is not exactly a field (URL for url), a field of the wrong type or
// anything after the document is refused with its line. The first pass reads plain
// values to learn which of the two forms the file has; the second reads that form.
func decode(path string, data []byte) ([]config, error) {
	var read func(string, []byte, any) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		read = document.JSON
	case ".yaml", ".yml":
		read = document.YAML
	default:
		return nil, fmt.Errorf("httptool: %s: unknown file type %q: want .json, .yaml or .yml", path, filepath.Ext(path))
	}
	var doc any
	if err := read(path, data, &doc); err != nil {
		return nil, fmt.Errorf("httptool: %w", err)
	}
	var list []config
	var file toolFile
	target, offset := any(&list), 0
	switch d := doc.(type) {
	case map[string]any:
		for k := range d {
			if k != "tools" {
				return nil, fmt.Errorf("httptool: %s: unknown top-level field %q: want a list of tools or {\"tools\": [...]}", path, k)
			}
		}
		if _, ok := d["tools"].([]any); !ok {
			return nil, fmt.Errorf("httptool: %s: want a list of tools or {\"tools\": [...]}", path)
		}
		target, offset = &file, 1
	case []any:
	default:
		return nil, fmt.Errorf("httptool: %s: want a list of tools or {\"tools\": [...]}", path)
	}
	if err := read(path, data, target); err != nil {
		var de *document.Error
		if errors.As(err, &de) {
			// Name the tool as the other errors do: /3/url or /tools/3/url is tool 4.
			parts := strings.Split(de.Path, "/")
			if len(parts) > 1+offset {
				if i, convErr := strconv.Atoi(parts[1+offset]); convErr == nil {
					name := fmt.Sprint(i + 1)
					if items := items(doc); i < len(items) {
						name = rawToolName(i, items[i])
					}
					named := *de
					named.Msg = "tool " + name + ": " + de.Msg
					return nil, fmt.Errorf("httptool: %w", &named)
				}
			}
		}
		return nil, fmt.Errorf("httptool: %w", err)
	}
	if offset == 1 {
		list = file.Tools
	}
	return list, nil
}

// items returns the tool declarations of the file's plain values.
func items(doc any) []any {
	if m, ok := doc.(map[string]any); ok {
		doc = m["tools"]
	}
	l, _ := doc.([]any)
	return l
}

// toolName names tool i for messages: "Namespace.method" when both are given, its
// position otherwise.
func toolName(i int, c config) string {
	if c.Namespace != "" && c.Method != "" {
		return fmt.Sprintf("%d (%s.%s)", i+1, c.Namespace, c.Method)
	}
	return fmt.Sprint(i + 1)
}

// rawToolName is toolName of a declaration that has not decoded.
func rawToolName(i int, raw any) string {
	m, _ := raw.(map[string]any)
	ns, _ := m["namespace"].(string)
	method, _ := m["method"].(string)
	return toolName(i, config{Namespace: ns, Method: method})
}

func (c *config) tool(env func(string) (string, bool)) (*hostfuncs.Tool, error) {
	if !fieldRE.MatchString(c.Namespace) {
		return nil, fmt.Errorf("namespace %q must be an identifier", c.Namespace)
	}
	if c.Method == "" || !fieldRE.MatchString(c.Method) {
		return nil, fmt.Errorf("method %q must be an identifier", c.Method)
	}
	if c.URL == "" {
		return nil, fmt.Errorf("missing url")
	}
	h := &httpTool{name: c.Namespace + "." + c.Method, readOnly: c.ReadOnly, timeout: DefaultTimeout, header: http.Header{},
		now: time.Now, sleep: hostfuncs.Sleep, placed: map[string]bool{}}

	h.method = strings.ToUpper(c.HTTPMethod)
	if h.method == "" {
		h.method = http.MethodPost
		if c.ReadOnly {
			h.method = http.MethodGet
		}
	}
	if !slices.Contains(httpMethods, h.method) {
		return nil, fmt.Errorf("http_method %q: want one of %s", c.HTTPMethod, strings.Join(httpMethods, ", "))
	}
	if err := c.bodyMode(h); err != nil {
		return nil, err
	}
	if c.Timeout != "" {
		d, err := time.ParseDuration(c.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("timeout %q: want a positive duration such as 10s", c.Timeout)
		}
		h.timeout = d
	}
	for _, s := range [][]byte{c.InputSchema, c.OutputSchema} {
		if err := hostfuncs.CompileSchema(s); err != nil {
			return nil, err
		}
	}
	props := schemaProperties(c.InputSchema)
	var err error
	var secrets []string
	if h.url, secrets, err = urlTemplate(c.URL, "url", props, !c.ReadOnly, env); err != nil {
		return nil, err
	}
	if err := checkHeaderNames(c.Headers); err != nil {
		return nil, err
	}
	for name, value := range c.Headers {
		if headerFieldRE.MatchString(envRE.ReplaceAllString(value, "")) {
			// {field} or {key}: filled from each call's input.
			if err := h.headerTemplate(name, value, props, !c.ReadOnly); err != nil {
				return nil, err
			}
			continue
		}
		v, vals, err := expandEnv(value, env)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", name, err)
		}
		secrets = append(secrets, vals...)
		if hostfuncs.IsSecretKey(name) && len(vals) == 0 {
			// A literal credential in the file is as secret as one from the environment.
			secrets = append(secrets, v)
			if i := strings.IndexByte(v, ' '); i > 0 {
				secrets = append(secrets, v[i+1:])
			}
		}
		for _, s := range secrets {
			if err := hostfuncs.CheckSecret(s); err != nil {
				return nil, fmt.Errorf("header %s: %w", name, err)
			}
		}
		h.header.Set(name, v)
	}
	if err := h.placeFields(c.RepeatInBody); err != nil {
		return nil, err
	}
	if c.Reconcile != nil {
		var more []string
		if h.reconcile, more, err = c.reconcileRequest(props, h.timeout, env); err != nil {
			return nil, err
		}
		secrets = append(secrets, more...)
		if h.reconcile.replay && len(c.SecretFields) > 0 {
			return nil, fmt.Errorf("reconcile: strategy replay re-sends the stored params, where secret_fields %v are redacted: use a lookup url instead", c.SecretFields)
		}
	}

	tool := &hostfuncs.Tool{
		Namespace:    c.Namespace,
		Method:       c.Method,
		Description:  c.Description,
		InputSchema:  c.InputSchema,
		OutputSchema: c.OutputSchema,
		Execute:      h.execute,
		Timeout:      h.timeout,
		SecretFields: c.SecretFields,
		Secrets:      secrets,
	}
	h.hide = urlSecretHider(h.url, h.reconcile)
	if c.ReadOnly {
		tool.ReadOnly = hostfuncs.ReadOnlyAlways
	}
	if h.reconcile != nil {
		tool.Reconcile = h.reconcileMutation
	}
	return tool, nil
}

// checkHeaderNames refuses two names of one header (Authorization and authorization):
// which value was sent would depend on the order a map is walked in.
func checkHeaderNames(headers map[string]string) error {
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)
	seen := map[string]string{}
	for _, name := range names {
		k := http.CanonicalHeaderKey(name)
		if first, dup := seen[k]; dup {
			return fmt.Errorf("headers: %q and %q name one header: keep one", first, name)
		}
		seen[k] = name
	}
	return nil
}

// bodyMode sets how the input becomes the request body.
func (c *config) bodyMode(h *httpTool) error {
	h.body = bodyMode(c.Body)
	switch h.body {
	case "":
		h.body = bodyNone
		if h.method == http.MethodPost || h.method == http.MethodPut || h.method == http.MethodPatch {
			h.body = bodyJSON
		}
	case bodyJSON, bodyForm, bodyQuery, bodyNone, bodyRaw:
	default:
		return fmt.Errorf("body %q: want json, form, query, raw or none", c.Body)
	}
	for name, v := range c.Headers {
		if http.CanonicalHeaderKey(name) != "Content-Type" {
			continue
		}
		if c.ContentType != "" {
			return fmt.Errorf("headers: Content-Type and content_type both given: keep content_type")
		}
		c.ContentType = v
	}
	h.contentType = c.ContentType
	switch {
	case (h.body == bodyNone || h.body == bodyQuery) && c.ContentType != "":
		return fmt.Errorf("content_type %q: a tool with body %s sends no body", c.ContentType, h.body)
	case h.body == bodyRaw && c.ContentType == "":
		return fmt.Errorf("body raw: missing content_type (such as text/csv or application/xml)")
	case h.body == bodyJSON && c.ContentType == "":
		h.contentType = "application/json"
	case h.body == bodyForm && c.ContentType == "":
		h.contentType = "application/x-www-form-urlencoded"
	}
	if c.ContentType != "" {
		if _, _, err := mime.ParseMediaType(c.ContentType); err != nil {
			return fmt.Errorf("content_type %q: %w", c.ContentType, err)
		}
	}
	if c.BodyField != "" && h.body != bodyRaw {
		return fmt.Errorf("body_field %q: only a raw body is taken from one field", c.BodyField)
	}
	if h.body == bodyRaw {
		h.bodyField = c.BodyField
		if h.bodyField == "" {
			h.bodyField = "body"
		}
		if !fieldRE.MatchString(h.bodyField) {
			return fmt.Errorf("body_field %q must be an identifier", c.BodyField)
		}
	}
	return nil
}

// headerTemplate declares a header whose value takes {field} from the input (or {key},
// the idempotency key). Environment variables and fields do not mix in one value: a
// secret from the environment could then be read as a placeholder.
func (h *httpTool) headerTemplate(name, value string, props []string, keyAllowed bool) error {
	if envRE.MatchString(value) {
		return fmt.Errorf("header %s: ${NAME} and {field} in one value: declare them in two headers", name)
	}
	for _, m := range headerFieldRE.FindAllStringSubmatch(value, -1) {
		switch f := m[1]; {
		case f == "key" && !keyAllowed:
			return fmt.Errorf("header %s: {key} is the idempotency key, which a read-only tool does not have", name)
		case f != "key" && props != nil && !slices.Contains(props, f):
			return fmt.Errorf("header %s: {%s} is not a property of the input schema", name, f)
		case f != "key":
			h.placed[f] = true
		}
	}
	if h.headerTmpl == nil {
		h.headerTmpl = map[string]string{}
	}
	h.headerTmpl[http.CanonicalHeaderKey(name)] = value
	return nil
}

// placeFields records the fields the URL takes, which the body leaves out (as it
// does the headers' fields) unless repeat lists them.
func (h *httpTool) placeFields(repeat []string) error {
	for _, f := range h.url.fields() {
		h.placed[f] = true
	}
	for _, f := range repeat {
		if !h.placed[f] {
			return fmt.Errorf("repeat_in_body: %q is not a field of the url or a header", f)
		}
		delete(h.placed, f)
	}
	if h.body == bodyQuery && strings.Contains(h.url.raw, "?") {
		return fmt.Errorf("body query: the url has a query already; put its fields in the input instead")
	}
	if len(repeat) > 0 && (h.body == bodyNone || h.body == bodyRaw) {
		return fmt.Errorf("repeat_in_body: a tool with body %s sends no fields in its body", h.body)
	}
	return nil
}

// reconcileRequest checks the reconcile declaration: a lookup (the default) asks a URL
// about the key; replay re-sends the mutation itself.
func (c *config) reconcileRequest(props []string, timeout time.Duration, env func(string) (string, bool)) (*reconcileRequest, []string, error) {
	if c.ReadOnly {
		return nil, nil, fmt.Errorf("reconcile: a read-only tool has no mutations to reconcile")
	}
	rc := c.Reconcile
	switch rc.Strategy {
	case "replay":
		if rc.Method != "" || rc.URL != "" || rc.Settle != "" {
			return nil, nil, fmt.Errorf("reconcile: strategy replay re-sends the tool's own request: method, url and settle are not used")
		}
		return &reconcileRequest{replay: true}, nil, nil
	case "", "lookup":
	default:
		return nil, nil, fmt.Errorf("reconcile: strategy %q: want lookup (the default, with a url) or replay", rc.Strategy)
	}
	m := strings.ToUpper(rc.Method)
	if m == "" {
		m = http.MethodGet
	}
	if m != http.MethodGet && m != http.MethodHead && m != http.MethodPost {
		return nil, nil, fmt.Errorf("reconcile: method %q: want GET, HEAD or POST", rc.Method)
	}
	if rc.URL == "" {
		return nil, nil, fmt.Errorf("reconcile: missing url (or declare strategy: replay)")
	}
	t, secrets, err := urlTemplate(rc.URL, "reconcile url", props, true, env)
	if err != nil {
		return nil, nil, err
	}
	settle := timeout
	if rc.Settle != "" {
		d, err := time.ParseDuration(rc.Settle)
		if err != nil || d < 0 {
			return nil, nil, fmt.Errorf("reconcile: settle %q: want a duration such as 30s (0s trusts a 404 at once)", rc.Settle)
		}
		settle = d
	}
	return &reconcileRequest{method: m, url: t, settle: settle}, secrets, nil
}

// envError is a ${NAME} reference that cannot be filled; Load gives the line it is on.
type envError struct {
	ref, msg string
}

func (e *envError) Error() string { return e.msg }

// expandEnv replaces ${NAME} in a header value and returns the values it used.
func expandEnv(value string, env func(string) (string, bool)) (string, []string, error) {
	var used []string
	var err error
	out := envRE.ReplaceAllStringFunc(value, func(m string) string {
		name := m[2 : len(m)-1]
		if !envNameRE.MatchString(name) {
			if err == nil {
				err = &envError{ref: m, msg: fmt.Sprintf("bad environment variable reference %q", m)}
			}
			return ""
		}
		v, ok := env(name)
		if !ok || v == "" {
			if err == nil {
				err = &envError{ref: m, msg: fmt.Sprintf("environment variable %s is not set", name)}
			}
			return ""
		}
		used = append(used, v)
		return v
	})
	return out, used, err
}

// refLine returns the line and column of the first ${NAME} reference ref in data, or 0.
func refLine(data []byte, ref string) (int, int) {
	i := bytes.Index(data, []byte(ref))
	if i < 0 {
		return 0, 0
	}
	before := data[:i]
	line := bytes.Count(before, []byte("\n")) + 1
	return line, i - bytes.LastIndexByte(before, '\n')
}

// urlTemplate is parseTemplate, then each ${NAME} reference replaced by the value of
// the environment variable it names: a secret, percent-encoded but for the unreserved
// characters (A-Z a-z 0-9 - . _ ~), so that it stays within its path segment or query
// value whatever it holds (/ ? # @ & = % or braces, which could otherwise be read as
// placeholders). A path value that is, or holds, a dot segment is refused: decoded by
// the service it would move the request off the path. It returns the values and their
// escaped forms, for the tool's Secrets.
func urlTemplate(raw, what string, props []string, keyAllowed bool, env func(string) (string, bool)) (template, []string, error) {
	t, err := parseTemplate(raw, what, props, keyAllowed)
	if err != nil || !envRE.MatchString(raw) {
		return t, nil, err
	}
	var secrets []string
	var b strings.Builder
	last := 0
	for _, m := range envRE.FindAllStringIndex(raw, -1) {
		ref := raw[m[0]:m[1]]
		v, _, err := expandEnv(ref, env)
		if err != nil {
			return template{}, nil, fmt.Errorf("%s: %w", what, err)
		}
		if err := hostfuncs.CheckSecret(v); err != nil {
			return template{}, nil, fmt.Errorf("%s: %s: %w", what, ref, err)
		}
		if m[0] < t.query && holdsDotSegment(v) {
			return template{}, nil, fmt.Errorf("%s: the value of %s is, or holds, a dot segment (. or ..), which would move the request off the URL's path", what, ref)
		}
		e := escapeAll(v)
		b.WriteString(raw[last:m[0]])
		b.WriteString(e)
		last = m[1]
		secrets = append(secrets, v, e)
		t.secrets = append(t.secrets, v)
	}
	b.WriteString(raw[last:])
	t.raw = b.String()
	if t.query = strings.IndexByte(t.raw, '?'); t.query < 0 {
		t.query = len(t.raw)
	}
	return t, secrets, nil
}

// escapeAll percent-encodes every byte of v but the unreserved characters of RFC 3986.
func escapeAll(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// authorityEnd returns the index in a URL where its scheme, user info and host end.
func authorityEnd(raw string) int {
	i := strings.Index(raw, "://")
	if i < 0 {
		return 0
	}
	i += 3
	if j := strings.IndexAny(raw[i:], "/?#"); j >= 0 {
		return i + j
	}
	return len(raw)
}

// urlSecretHider returns what hides the secrets of the tool's URLs in its messages,
// as they are and in each escaped form (in the URL, or echoed in an error body), or
// nil when there are none.
func urlSecretHider(u template, rc *reconcileRequest) *strings.Replacer {
	values := slices.Clone(u.secrets)
	if rc != nil {
		values = append(values, rc.url.secrets...)
	}
	if len(values) == 0 {
		return nil
	}
	var secrets []string
	for _, v := range values {
		j, _ := json.Marshal(v)
		secrets = append(secrets, v, escapeAll(v), url.PathEscape(v), url.QueryEscape(v), string(j[1:len(j)-1]))
	}
	// Longest first, so that a secret holding another is hidden whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, hostfuncs.Redacted)
	}
	return strings.NewReplacer(pairs...)
}

// schemaProperties returns the names of the input schema's top-level properties, or
// nil when the schema does not list them (every field is then accepted in a URL).
func schemaProperties(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil || s.Properties == nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	return out
}

// template is a URL with {field} and {key} placeholders.
type template struct {
	raw string
	// query is the index in raw where the query string starts (len(raw) if none):
	// values are path-escaped before it and query-escaped after.
	query int
	// secrets are the values of the ${NAME} references raw had: what messages about
	// the request hide.
	secrets []string
}

// parseTemplate checks a URL template: its placeholders name input fields ({key} only
// where keyAllowed), and it is an absolute http or https URL with neither placeholders
// nor ${NAME} references in its scheme or host. The references are left as they are.
func parseTemplate(raw, what string, props []string, keyAllowed bool) (template, error) {
	plain := envRE.ReplaceAllString(raw, "x")
	for _, m := range placeholderRE.FindAllStringSubmatch(plain, -1) {
		f := m[1]
		switch {
		case !fieldRE.MatchString(f):
			return template{}, fmt.Errorf("%s: bad template field %q: want {name} with an identifier", what, m[0])
		case f == "key":
			if !keyAllowed {
				return template{}, fmt.Errorf("%s: {key} is the idempotency key, which a read-only tool does not have", what)
			}
		case props != nil && !slices.Contains(props, f):
			return template{}, fmt.Errorf("%s: bad template field {%s}: not a property of the input schema", what, f)
		}
	}
	if strings.Contains(raw[:authorityEnd(raw)], "{") {
		return template{}, fmt.Errorf("%s %q: placeholders and ${NAME} are not allowed in the scheme, user info or host: "+
			"a value there would choose the server (and a secret would go out in DNS look-ups and TLS server names); put it in the path, the query or a header", what, raw)
	}
	probe := placeholderRE.ReplaceAllString(plain, "x")
	u, err := url.Parse(probe)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return template{}, fmt.Errorf("%s %q: want an absolute http or https URL", what, raw)
	}
	if i := strings.IndexByte(raw, '#'); i >= 0 && strings.Contains(raw[i:], "{") {
		return template{}, fmt.Errorf("%s %q: placeholders and ${NAME} are not allowed in the fragment, which is never sent", what, raw)
	}
	q := strings.IndexByte(raw, '?')
	if q < 0 {
		q = len(raw)
	}
	return template{raw: raw, query: q}, nil
}

// fields returns the input fields the template names ({key} is not one).
func (t template) fields() []string {
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(t.raw, -1) {
		if m[1] != "key" && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}
