package httptool_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
)

// hookSecret is a webhook token with every character that could leave its path
// segment: a slash, an at sign, a dot pair, a query and fragment start, a percent and
// braces (which must not be read as a {field}).
const hookSecret = "T0K/en@x..y?z#w%2F{id}&q=1"

// querySecret goes into the query string.
const querySecret = "sig+nature/with=&chars"

func hookEnv(name string) (string, bool) {
	switch name {
	case "HOOK_TOKEN":
		return hookSecret, true
	case "HOOK_SIG":
		return querySecret, true
	case "DOTTY":
		return "../../admin", true
	case "SHORTY":
		return "abc", true
	}
	return "", false
}

// urlForms are the ways a URL secret could appear in text.
func urlForms(v string) []string {
	j, _ := json.Marshal(v)
	return []string{v, url.PathEscape(v), url.QueryEscape(v), string(j[1 : len(j)-1])}
}

func leaksURLSecret(s string) bool {
	for _, v := range []string{hookSecret, querySecret} {
		for _, f := range urlForms(v) {
			if strings.Contains(s, f) {
				return true
			}
		}
	}
	return strings.Contains(s, "T0K%2Fen%40x..y%3Fz%23w%252F%7Bid%7D%26q%3D1")
}

// hookServer records the escaped path and the query of each request, and answers with
// status.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	paths  []string
	query  []url.Values
	status int
}

func newHookServer(t *testing.T) *hookServer {
	h := &hookServer{status: http.StatusOK}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.paths = append(h.paths, r.URL.EscapedPath())
		h.query = append(h.query, r.URL.Query())
		status := h.status
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status != http.StatusOK {
			// A service that echoes the path it could not serve.
			b, _ := json.Marshal(map[string]string{"error": "no hook at " + r.URL.Path + " (" + r.URL.EscapedPath() + ")"})
			w.Write(b)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(h.Close)
	return h
}

func hookTool(t *testing.T, base string) *hostfuncs.Tool {
	t.Helper()
	decl := "- namespace: Slack\n  method: post\n  url: \"" + base + "/services/T01/${HOOK_TOKEN}/{channel}?sig=${HOOK_SIG}&ts={ts}\"\n" +
		"  input_schema: {type: object, properties: {channel: {type: string}, ts: {type: string}, text: {type: string}}}\n"
	tools, err := httptool.Load(write(t, "tools.yaml", decl), hookEnv)
	if err != nil {
		t.Fatal(err)
	}
	return tools[0]
}

// TestURLSecretStaysInItsSegment: a ${NAME} secret in the path reaches the service as
// exactly one path segment, whatever it holds, and one in the query as one value; the
// input's fields fill the other placeholders; the tool carries the secret for its
// redactor.
func TestURLSecretStaysInItsSegment(t *testing.T) {
	srv := newHookServer(t)
	tool := hookTool(t, srv.URL)
	if _, err := tool.Execute(hostfuncs.WithIdempotencyKey(context.Background(), "k1"), json.RawMessage(`{"channel":"ops","ts":"17","text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if len(srv.paths) != 1 {
		t.Fatalf("got %d requests, want 1", len(srv.paths))
	}
	segs := strings.Split(srv.paths[0], "/")
	if len(segs) != 5 || segs[1] != "services" || segs[2] != "T01" || segs[4] != "ops" {
		t.Fatalf("got path %q, want /services/T01/<secret>/ops", srv.paths[0])
	}
	if got, err := url.PathUnescape(segs[3]); err != nil || got != hookSecret {
		t.Errorf("got segment %q (%q), want the secret whole", segs[3], got)
	}
	if q := srv.query[0]; q.Get("sig") != querySecret || q.Get("ts") != "17" || len(q) != 2 {
		t.Errorf("got query %v, want sig and ts only", q)
	}
	for _, want := range []string{hookSecret, querySecret} {
		found := false
		for _, s := range tool.Secrets {
			found = found || s == want
		}
		if !found {
			t.Errorf("tool.Secrets lacks a URL secret")
		}
	}
}

// TestURLSecretNotInErrors: the messages that name the request's URL (a service's 500
// that echoes the path, a refused connection) hide the secret.
func TestURLSecretNotInErrors(t *testing.T) {
	srv := newHookServer(t)
	srv.status = http.StatusInternalServerError
	ctx := hostfuncs.WithIdempotencyKey(context.Background(), "k1")
	in := json.RawMessage(`{"channel":"ops","ts":"17"}`)
	_, err := hookTool(t, srv.URL).Execute(ctx, in)
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || strings.Count(err.Error(), "/services/T01/"+hostfuncs.Redacted+"/ops") != 3 {
		t.Fatalf("got %v, want the 500 with the secret hidden", err)
	}
	if leaksURLSecret(err.Error()) {
		t.Errorf("error %q leaks the secret", err)
	}

	l, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	_, err = hookTool(t, closed).Execute(ctx, in)
	if err == nil || !strings.Contains(err.Error(), hostfuncs.Redacted) {
		t.Fatalf("got %v, want a connection error with the secret hidden", err)
	}
	if leaksURLSecret(err.Error()) {
		t.Errorf("error %q leaks the secret", err)
	}
}

// TestURLSecretLoadErrors: a ${NAME} is refused where it could choose the server or is
// never sent, a missing variable is named with the file and line of its reference, a
// path secret that is a dot segment and a short secret are refused, and no message
// holds a value.
func TestURLSecretLoadErrors(t *testing.T) {
	tests := []struct {
		name, url string
		want      []string
	}{
		{"host", "https://${HOOK_TOKEN}.example.com/x", []string{"not allowed in the scheme, user info or host"}},
		{"host suffix", "https://api.example.com${HOOK_TOKEN}", []string{"not allowed in the scheme, user info or host"}},
		{"port", "https://api.example.com:${HOOK_TOKEN}/x", []string{"not allowed in the scheme, user info or host"}},
		{"user info", "https://user:${HOOK_TOKEN}@api.example.com/x", []string{"not allowed in the scheme, user info or host"}},
		{"fragment", "https://api.example.com/x#${HOOK_TOKEN}", []string{"fragment"}},
		{"missing", "https://api.example.com/x/${NOPE}", []string{"t.yaml:4:35: tool 1 (Slack.post): url: environment variable NOPE is not set"}},
		{"bad name", "https://api.example.com/x/${NO-PE}", []string{"t.yaml:4:35:", `bad environment variable reference "${NO-PE}"`}},
		{"dot segment", "https://api.example.com/x/${DOTTY}/y", []string{"url: the value of ${DOTTY} is, or holds, a dot segment"}},
		{"short", "https://api.example.com/x?k=${SHORTY}", []string{"url: ${SHORTY}", "shorter than 8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decl := "- namespace: Slack\n  method: post\n  read_only: true\n  url: \"" + tt.url + "\"\n"
			_, err := httptool.Load(write(t, "t.yaml", decl), hookEnv)
			if err == nil {
				t.Fatalf("got no error, want %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			if leaksURLSecret(err.Error()) || strings.Contains(err.Error(), "../../admin") || strings.Contains(err.Error(), "abc") {
				t.Errorf("error %q holds a value", err)
			}
		})
	}
	// The reconcile URL takes secrets under the same rules.
	decl := "- namespace: Slack\n  method: post\n  url: \"https://api.example.com/x\"\n  reconcile: {url: \"https://api.example.com/${NOPE}/{key}\"}\n"
	if _, err := httptool.Load(write(t, "t.yaml", decl), hookEnv); err == nil || !strings.Contains(err.Error(), "t.yaml:4:45: tool 1 (Slack.post): reconcile url: environment variable NOPE is not set") {
		t.Errorf("reconcile url: got %v, want the missing variable at its line", err)
	}
}
