package httptool

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// traceContext writes the W3C traceparent and tracestate headers of the span in the
// call's context (the tool call's span, when the host traces), so that the service's
// spans join the run's trace; without a span it writes nothing.
var traceContext propagation.TextMapPropagator = propagation.TraceContext{}

// maxBody bounds a response body read into memory.
const maxBody = 10 << 20

// noRedirect keeps a client from following redirects: a redirected POST would
// silently turn into a GET.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// readClient sends reads and reconcile look-ups over pooled connections.
var readClient = &http.Client{CheckRedirect: noRedirect}

// mutateClient sends mutations, each on a fresh connection. net/http replays a request
// that carries an Idempotency-Key header when a reused keep-alive connection turns out
// to be closed, without telling the caller: a service that applied the first copy and
// then dropped the connection would see the mutation twice, and a service that does
// not honour the key would apply it twice. Without reused connections there is no
// replay; the wrapper alone decides what happens after an uncertain outcome.
var mutateClient = &http.Client{CheckRedirect: noRedirect, Transport: noKeepAlive()}

func noKeepAlive() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c}, nil
	}
	return t
}

// countingConn counts the bytes written on a connection, so that a failed request can
// tell whether any byte of it left the host (sendTrace).
type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// sendTrace follows one request's connections: what had been written on each when the
// request was given it (the TLS handshake and a proxy's CONNECT come before). A request
// was sent, as far as the service can know, once a byte was written after that; until
// a connection is given it, nothing was (the name did not resolve, the dial was
// refused or timed out, the handshake failed).
type sendTrace struct {
	mu    sync.Mutex
	marks []connMark
}

// connMark is a connection given to the request; c is nil when its writes cannot be
// counted, which counts as sent.
type connMark struct {
	c  *countingConn
	at int64
}

func (s *sendTrace) gotConn(info httptrace.GotConnInfo) {
	conn := info.Conn
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	m := connMark{}
	if cc, ok := conn.(*countingConn); ok {
		m = connMark{c: cc, at: cc.n.Load()}
	}
	s.mu.Lock()
	s.marks = append(s.marks, m)
	s.mu.Unlock()
}

// sent reports whether any byte of the request may have been written.
func (s *sendTrace) sent() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.marks {
		if m.c == nil || m.c.n.Load() > m.at {
			return true
		}
	}
	return false
}

type httpTool struct {
	name        string
	method      string
	url         template
	header      http.Header
	body        bodyMode
	contentType string
	bodyField   string            // the input field a raw body is
	headerTmpl  map[string]string // header values with {field} or {key}, filled per call
	placed      map[string]bool   // fields the URL and headers take, left out of the body
	readOnly    bool
	timeout     time.Duration
	reconcile   *reconcileRequest
	hide        *strings.Replacer // the URL templates' secrets, for messages; nil if none
	now         func() time.Time
	sleep       func(context.Context, time.Duration) error
}

type reconcileRequest struct {
	replay bool // re-send the mutation itself; method and url are unused
	method string
	url    template
	// settle is how long past the call's timeout a look-up's 404 may still mean a
	// request under way rather than one that never arrived.
	settle time.Duration
}

// maxReadRetries bounds the extra attempts a read makes when the service asks it to
// come back (429 or 503 with Retry-After no longer than the tool's timeout).
const maxReadRetries = 2

func (h *httpTool) execute(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	key := hostfuncs.IdempotencyKey(ctx)
	req, err := h.request(input, key)
	if err != nil {
		return nil, h.errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "%v", err)
	}
	for attempt := 0; ; attempt++ {
		resp, err := h.do(ctx, req, key)
		if err != nil {
			return nil, err
		}
		if resp.status/100 == 2 {
			return asJSON(resp.body), nil
		}
		if h.readOnly && attempt < maxReadRetries {
			if d, ok := h.retryAfter(resp); ok && d <= h.timeout {
				if err := h.sleep(ctx, d); err != nil {
					return nil, &scripthost.Error{Class: scripthost.ClassNetwork, Op: h.name,
						Message: fmt.Sprintf("%s %s: waiting %s as the service asked: %v", req.method, h.redactURL(req.url), d, err), Err: err}
				}
				continue
			}
		}
		return nil, h.statusError(req, resp, key != "" && !h.readOnly)
	}
}

// reconcileMutation asks the service about m: by replaying the mutation, or with the
// declared look-up request, whose 2xx means applied (the body is the result), 404
// failed once the first request can no longer be under way (m.CreatedAt plus the
// timeout and settle; retry later before that), and anything else retry later.
func (h *httpTool) reconcileMutation(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
	if h.reconcile.replay {
		return h.replay(ctx, m)
	}
	fields, _ := inputFields(m.Params)
	u, err := h.reconcile.url.expand(fields, m.IdempotencyKey)
	if err != nil {
		return scripthost.Reconciliation{}, h.errorf(scripthost.ClassLogic, "", "reconcile: %v", err)
	}
	resp, err := h.do(ctx, outgoing{method: h.reconcile.method, url: u}, "")
	if err != nil {
		return scripthost.Reconciliation{}, err
	}
	switch {
	case resp.status/100 == 2:
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: asJSON(resp.body)}, nil
	case resp.status == http.StatusNotFound:
		// No record may be no record yet: the first request can still be on its way or
		// being processed until its timeout (and the service's own lag, settle) has
		// passed. Concluding "failed" before that would let a fresh attempt, under a
		// new key, apply the same effect a second time.
		if until := m.CreatedAt.Add(h.timeout + h.reconcile.settle); !m.CreatedAt.IsZero() && h.now().Before(until) {
			return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, RetryAfter: until.Sub(h.now()),
				Reason: fmt.Sprintf("%s %s: HTTP 404: no record yet; the first request may still be under way until %s",
					h.reconcile.method, h.redactURL(u), until.UTC().Format(time.RFC3339Nano))}, nil
		}
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed,
			Reason: fmt.Sprintf("%s %s: HTTP 404: the service has no record of the mutation", h.reconcile.method, h.redactURL(u))}, nil
	}
	wait, _ := h.retryAfter(resp)
	return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, RetryAfter: wait,
		Reason: fmt.Sprintf("%s %s: HTTP %d%s", h.reconcile.method, h.redactURL(u), resp.status, h.describe(resp.body))}, nil
}

// response is what came back: status, headers and the body (bounded).
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request with the tool's headers and timeout. A transport failure is a
// network error (code timeout when the deadline passed).
func (h *httpTool) do(ctx context.Context, o outgoing, key string) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	trace := &sendTrace{}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: trace.gotConn})
	var rd io.Reader
	if o.body != nil {
		rd = bytes.NewReader(o.body)
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, rd)
	if err != nil {
		return response{}, h.errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "building the request: %v", h.redactURL(fmt.Sprint(errors.Unwrap(err))))
	}
	req.Header = h.header.Clone()
	for k, v := range o.header {
		req.Header[k] = v
	}
	req.Header.Del("Content-Type")
	if o.body != nil {
		req.Header.Set("Content-Type", o.contentType)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	traceContext.Inject(ctx, propagation.HeaderCarrier(req.Header))
	client := readClient
	if key != "" && !h.readOnly {
		req.Header.Set("Idempotency-Key", key)
		req.GetBody = nil // not replayable, whatever the transport
		client = mutateClient
	}
	resp, err := client.Do(req)
	if err != nil {
		code := ""
		if errors.Is(err, context.DeadlineExceeded) {
			code = scripthost.CodeTimeout
		}
		// The *url.Error's text repeats the URL; only the cause is kept, and never
		// the request, whose headers hold credentials.
		cause := err
		var ue *url.Error
		if errors.As(err, &ue) {
			cause = ue.Err
		}
		msg := fmt.Sprintf("%s %s: %v", o.method, h.redactURL(o.url), cause)
		if !trace.sent() {
			// Nothing of the request left the host: a mutation definitely did not
			// happen, and is sent again under its key. After any byte was written the
			// service may have read it all and acted: that stays unknown.
			cause = &hostfuncs.NotSentError{Err: cause}
			msg += " (the request was never sent)"
		}
		return response{}, &scripthost.Error{Class: scripthost.ClassNetwork, Code: code, Op: h.name, Message: msg, Err: cause}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		// The status arrived but the body did not: for a mutation the outcome is
		// unknown either way.
		return response{}, &scripthost.Error{Class: scripthost.ClassNetwork, Op: h.name,
			Message: fmt.Sprintf("%s %s: HTTP %d, reading the body: %v", o.method, h.redactURL(o.url), resp.StatusCode, err), Err: err}
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// statusError classifies a non-2xx answer: 401 auth, 403 permission, 408 and 429
// network (try again), 409 to a keyed mutation network (another request with the key
// is under way: the outcome is unknown), other 4xx logic (the service refused:
// definite), 5xx and the rest network (the outcome of a mutation is unknown). A JSON
// error body gives the error its message and code.
func (h *httpTool) statusError(o outgoing, resp response, keyed bool) error {
	class := scripthost.ClassNetwork
	switch status := resp.status; {
	case status == http.StatusUnauthorized:
		class = scripthost.ClassAuth
	case status == http.StatusForbidden:
		class = scripthost.ClassPermission
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		class = scripthost.ClassNetwork
	case status == http.StatusConflict && keyed:
		class = scripthost.ClassNetwork
	case status/100 == 4:
		class = scripthost.ClassLogic
	}
	e := serviceError(resp.body)
	msg := fmt.Sprintf("%s %s: HTTP %d%s", o.method, h.redactURL(o.url), resp.status, h.describe(resp.body))
	var cause error
	if d, ok := h.retryAfter(resp); ok {
		msg += fmt.Sprintf(" (retry after %s)", d)
		cause = &hostfuncs.RetryAfterError{Wait: d}
	}
	return &scripthost.Error{Class: class, Code: e.code, Op: h.name, Message: msg, Err: cause}
}

func (h *httpTool) errorf(class scripthost.ErrorClass, code, format string, args ...any) error {
	return &scripthost.Error{Class: class, Code: code, Op: h.name, Message: fmt.Sprintf(format, args...)}
}

// asJSON returns body when it is JSON, a JSON string of it otherwise, null when empty.
func asJSON(body []byte) json.RawMessage {
	if len(bytes.TrimSpace(body)) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(body) {
		return json.RawMessage(body)
	}
	b, _ := json.Marshal(string(body))
	return b
}

// snippet is the start of a body for a message.
func snippet(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}

// describe is describe with the secrets of the tool's URLs hidden: a service may echo
// the path it was asked for.
func (h *httpTool) describe(body []byte) string {
	if h.hide == nil {
		return describe(body)
	}
	return h.hide.Replace(describe(body))
}

// redactURL drops user info from a URL for messages, and hides the values of the
// ${NAME} references of the tool's URL templates.
func (h *httpTool) redactURL(u string) string {
	if h.hide != nil {
		u = h.hide.Replace(u)
	}
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	return p.String()
}

// inputFields decodes an object's top-level fields; anything else has none.
func inputFields(input json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(input)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("input is not JSON: %w", err)
	}
	m, _ := v.(map[string]any)
	return m, nil
}

// expand fills the template: {key} with the idempotency key, {field} with the input
// field, path-escaped before the query and query-escaped in it. A query parameter whose
// field is absent (or null) is left out; a path field must be present.
func (t template) expand(fields map[string]any, key string) (string, error) {
	path, err := fill(placeholderRE, t.raw[:t.query], "the URL", fields, key, url.PathEscape, onePathSegment)
	if err != nil {
		return "", err
	}
	if t.query == len(t.raw) {
		return path, nil
	}
	var kept []string
	for _, part := range strings.Split(t.raw[t.query+1:], "&") {
		v, err := fill(placeholderRE, part, "the URL", fields, key, url.QueryEscape, nil)
		if errors.Is(err, errMissing) {
			continue
		}
		if err != nil {
			return "", err
		}
		kept = append(kept, v)
	}
	if len(kept) == 0 {
		return path, nil
	}
	return path + "?" + strings.Join(kept, "&"), nil
}

var errMissing = errors.New("missing field")

// onePathSegment refuses a URL path value that is, or holds, a dot segment once
// decoded: PathEscape keeps "." and ".." as they are, and a value such as %2e%2e or
// ..%2f is escaped once but decoded again by many servers and proxies, so either would
// move the request off the templated path (/v1/customers/{id} with id ".." is
// /v1/). An empty value is refused too: it drops the segment, naming the collection
// instead of one of its members.
func onePathSegment(name, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("input field %q is empty, and the URL path needs a segment from it", name)
	}
	if holdsDotSegment(v) {
		return fmt.Errorf("input field %q is a dot segment (%q) once decoded, which would move the request off the URL's path", name, v)
	}
	return nil
}

// holdsDotSegment reports whether v, or v decoded up to four times, has a dot segment.
func holdsDotSegment(v string) bool {
	for range 4 {
		if dotSegment(v) {
			return true
		}
		d, err := url.PathUnescape(v)
		if err != nil || d == v {
			return false
		}
		v = d
	}
	return dotSegment(v)
}

// dotSegment reports whether v, split at slashes and backslashes, has a segment that
// is "." or ".." (ignoring a ;parameter, which some servers strip before resolving).
func dotSegment(v string) bool {
	for _, seg := range strings.FieldsFunc(v, func(r rune) bool { return r == '/' || r == '\\' }) {
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			seg = seg[:i]
		}
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// fill replaces the placeholders re finds in s ({key} and {field}) for what ("the URL",
// "header X"), escaping each value; check, when set, may refuse a field's value first.
func fill(re *regexp.Regexp, s, what string, fields map[string]any, key string, escape func(string) string, check func(name, v string) error) (string, error) {
	var err error
	out := re.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		if name == "key" {
			if key == "" && err == nil {
				err = fmt.Errorf("%s needs the idempotency key, and the call has none", what)
			}
			return escape(key)
		}
		v, ok := fields[name]
		if !ok || v == nil {
			if err == nil {
				err = fmt.Errorf("input field %q is needed by %s: %w", name, what, errMissing)
			}
			return ""
		}
		var text string
		switch x := v.(type) {
		case string:
			text = x
		case json.Number:
			text = x.String()
		default:
			b, _ := json.Marshal(v)
			text = string(b)
		}
		if check != nil && err == nil {
			err = check(name, text)
		}
		return escape(text)
	})
	return out, err
}
