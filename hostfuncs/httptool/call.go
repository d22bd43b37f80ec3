package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

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
	return t
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
						Message: fmt.Sprintf("%s %s: waiting %s as the service asked: %v", req.method, redactURL(req.url), d, err), Err: err}
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
					h.reconcile.method, redactURL(u), until.UTC().Format(time.RFC3339Nano))}, nil
		}
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed,
			Reason: fmt.Sprintf("%s %s: HTTP 404: the service has no record of the mutation", h.reconcile.method, redactURL(u))}, nil
	}
	wait, _ := h.retryAfter(resp)
	return scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, RetryAfter: wait,
		Reason: fmt.Sprintf("%s %s: HTTP %d%s", h.reconcile.method, redactURL(u), resp.status, describe(resp.body))}, nil
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
	var rd io.Reader
	if o.body != nil {
		rd = bytes.NewReader(o.body)
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url, rd)
	if err != nil {
		return response{}, h.errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "building the request: %v", errors.Unwrap(err))
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
		return response{}, &scripthost.Error{Class: scripthost.ClassNetwork, Code: code, Op: h.name,
			Message: fmt.Sprintf("%s %s: %v", o.method, redactURL(o.url), cause), Err: cause}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		// The status arrived but the body did not: for a mutation the outcome is
		// unknown either way.
		return response{}, &scripthost.Error{Class: scripthost.ClassNetwork, Op: h.name,
			Message: fmt.Sprintf("%s %s: HTTP %d, reading the body: %v", o.method, redactURL(o.url), resp.StatusCode, err), Err: err}
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
	msg := fmt.Sprintf("%s %s: HTTP %d%s", o.method, redactURL(o.url), resp.status, describe(resp.body))
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

// redactURL drops user info from a URL for messages.
func redactURL(u string) string {
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
	path, err := fill(placeholderRE, t.raw[:t.query], "the URL", fields, key, url.PathEscape)
	if err != nil {
		return "", err
	}
	if t.query == len(t.raw) {
		return path, nil
	}
	var kept []string
	for _, part := range strings.Split(t.raw[t.query+1:], "&") {
		v, err := fill(placeholderRE, part, "the URL", fields, key, url.QueryEscape)
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

// fill replaces the placeholders re finds in s ({key} and {field}) for what ("the URL",
// "header X"), escaping each value.
func fill(re *regexp.Regexp, s, what string, fields map[string]any, key string, escape func(string) string) (string, error) {
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
		switch x := v.(type) {
		case string:
			return escape(x)
		case json.Number:
			return escape(x.String())
		}
		b, _ := json.Marshal(v)
		return escape(string(b))
	})
	return out, err
}
