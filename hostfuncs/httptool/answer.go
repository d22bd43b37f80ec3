package httptool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// maxRetryAfter bounds the wait a service can ask for.
const maxRetryAfter = 24 * time.Hour

// apiError is what a JSON error body says.
type apiError struct {
	kind    string // Stripe's error.type, or a problem's type
	code    string // the code for the tool error
	message string
	param   string
}

// serviceError reads a JSON error body: Stripe's {"error": {"type", "code", "message",
// "param"}}, an RFC 9457 problem ({"type", "title", "detail"}), or {"error": "text"}
// or {"message": "text"}. Anything else says nothing.
func serviceError(body []byte) apiError {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Title   string          `json:"title"`
		Detail  string          `json:"detail"`
		Code    any             `json:"code"`
	}
	if json.Unmarshal(body, &v) != nil {
		return apiError{}
	}
	var nested struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Param   string `json:"param"`
	}
	var text string
	switch {
	case json.Unmarshal(v.Error, &nested) == nil && (nested.Type != "" || nested.Code != "" || nested.Message != ""):
		e := apiError{kind: nested.Type, code: nested.Code, message: nested.Message, param: nested.Param}
		if e.code == "" {
			e.code = e.kind
		}
		return e
	case json.Unmarshal(v.Error, &text) == nil && text != "":
		return apiError{message: text, code: codeString(v.Code)}
	case v.Title != "" || v.Detail != "":
		e := apiError{kind: v.Type, message: v.Title, code: codeString(v.Code)}
		switch {
		case v.Title == "":
			e.message = v.Detail
		case v.Detail != "":
			e.message = v.Title + ": " + v.Detail
		}
		if e.code == "" && v.Type != "about:blank" {
			e.code = v.Type
		}
		return e
	case v.Message != "":
		return apiError{message: v.Message, code: codeString(v.Code)}
	}
	return apiError{}
}

func codeString(c any) string {
	switch x := c.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

// describe is a body for a message: what a JSON error says, else its start.
func describe(body []byte) string {
	e := serviceError(body)
	if e.message == "" && e.code == "" {
		return snippet(body)
	}
	var b strings.Builder
	b.WriteString(": ")
	if e.code != "" {
		b.WriteString(e.code)
		if e.message != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.message)
	if e.param != "" {
		fmt.Fprintf(&b, " (param %s)", e.param)
	}
	return b.String()
}

// retryAfter reads the Retry-After of a 429 or 503: seconds, or an HTTP date taken
// against the tool's clock; a date in the past is no wait. Longer than maxRetryAfter
// is taken as maxRetryAfter.
func (h *httpTool) retryAfter(resp response) (time.Duration, bool) {
	if resp.status != http.StatusTooManyRequests && resp.status != http.StatusServiceUnavailable {
		return 0, false
	}
	v := strings.TrimSpace(resp.header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		d = maxRetryAfter
		if n < int64(maxRetryAfter/time.Second) {
			d = time.Duration(n) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(t.Sub(h.now()), 0)
	} else {
		return 0, false
	}
	return min(d, maxRetryAfter), true
}

// replay re-sends m exactly as it was first sent (method, URL, body and
// Idempotency-Key), to a service that answers a key it has seen with the outcome it
// stored: a 2xx is applied with that result; 409 (a request with the key is still
// under way), 401, 403, 408, 429 and 5xx are try later; 422, or a 4xx whose error
// type is idempotency_error, says the key was used with other parameters, which no
// retry mends: a person decides; any other 4xx is the stored refusal, so the mutation
// failed.
func (h *httpTool) replay(ctx context.Context, m scripthost.Mutation) (scripthost.Reconciliation, error) {
	if bytes.Contains(m.Params, []byte(hostfuncs.Redacted)) {
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileIndeterminate,
			Reason: "replay: the stored params hold redacted values, so the request cannot be sent again as it was"}, nil
	}
	o, err := h.request(m.Params, m.IdempotencyKey)
	if err != nil {
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileIndeterminate, Reason: fmt.Sprintf("replay: %v", err)}, nil
	}
	resp, err := h.do(ctx, o, m.IdempotencyKey)
	if err != nil {
		return scripthost.Reconciliation{}, err
	}
	reason := fmt.Sprintf("replay %s %s: HTTP %d%s", o.method, h.redactURL(o.url), resp.status, h.describe(resp.body))
	wait, _ := h.retryAfter(resp)
	later := scripthost.Reconciliation{Outcome: scripthost.ReconcileRetryLater, Reason: reason, RetryAfter: wait}
	switch status := resp.status; {
	case status/100 == 2:
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileApplied, Result: asJSON(resp.body)}, nil
	case status == http.StatusConflict:
		later.Reason += " (a request with this key is still under way)"
		return later, nil
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return later, nil
	case status == http.StatusUnprocessableEntity || status/100 == 4 && serviceError(resp.body).kind == "idempotency_error":
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileIndeterminate,
			Reason: reason + " (the service holds this key for a request with other parameters)"}, nil
	case status/100 == 4:
		return scripthost.Reconciliation{Outcome: scripthost.ReconcileFailed, Reason: reason + " (the service's stored refusal)"}, nil
	}
	return later, nil
}
