package httptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

const secret = "sk_env_value_7f3a9c"

func env(name string) (string, bool) {
	switch name {
	case "SVC_TOKEN":
		return secret, true
	case "EMPTY":
		return "", true
	}
	return "", false
}

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name, file, content string
		want                []string
	}{
		{"unknown field", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  colour: red\n", []string{"t.yaml:4:3: tool 1 (Svc.charge): ", `unknown field "colour" at /0`}},
		{"unknown reconcile field", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  reconcile: {url: 'http://x/{key}', verb: GET}\n", []string{"t.yaml:4:38: tool 1 (Svc.charge): ", `unknown field "verb" at /0/reconcile`}},
		{"bad settle", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  reconcile: {url: 'http://x/{key}', settle: soon}\n", []string{"Svc.charge", `reconcile: settle "soon"`}},
		{"settle with replay", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  reconcile: {strategy: replay, settle: 5s}\n", []string{"Svc.charge", "method, url and settle are not used"}},
		{"missing url", "t.json", `[{"namespace":"Svc","method":"charge"}]`, []string{"t.json", "Svc.charge", "missing url"}},
		{"bad template field", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/{a-b}\n", []string{"Svc.charge", `bad template field "{a-b}"`}},
		{"template field not in schema", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/{id}\n  input_schema: {type: object, properties: {amount: {type: integer}}}\n", []string{"Svc.charge", "{id}: not a property of the input schema"}},
		{"key in a read", "t.yaml", "- namespace: Svc\n  method: get\n  read_only: true\n  url: http://x/{key}\n", []string{"Svc.get", "{key}"}},
		{"env not set", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  headers: {Authorization: 'Bearer ${NOPE}'}\n", []string{"Svc.charge", "header Authorization", "environment variable NOPE is not set"}},
		{"env empty", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  headers: {X-Key: '${EMPTY}'}\n", []string{"environment variable EMPTY is not set"}},
		{"bad http method", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  http_method: FETCH\n", []string{`http_method "FETCH"`}},
		{"bad timeout", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  timeout: soon\n", []string{`timeout "soon"`}},
		{"not http", "t.yaml", "- namespace: Svc\n  method: charge\n  url: ftp://x/\n", []string{"want an absolute http or https URL"}},
		{"placeholder in host", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://{host}/x\n", []string{"scheme, user info or host"}},
		{"bad schema", "t.yaml", "- namespace: Svc\n  method: charge\n  url: http://x/\n  input_schema: {type: 5}\n", []string{"Svc.charge", "schema"}},
		{"bad namespace", "t.yaml", "- namespace: 'S v c'\n  method: charge\n  url: http://x/\n", []string{"namespace"}},
		{"duplicate", "t.yaml", "- {namespace: Svc, method: a, url: 'http://x/'}\n- {namespace: Svc, method: a, url: 'http://x/'}\n", []string{"declared twice"}},
		{"wrong type", "t.yaml", "- namespace: Svc\n  method: a\n  url: http://x/\n  read_only: maybe\n", []string{"t.yaml:4:14: tool 1 (Svc.a): cannot decode string into bool at /0/read_only"}},
		{"extension", "t.txt", "[]", []string{"t.txt", "unknown file type"}},
		{"bad yaml", "t.yaml", "- [", []string{"invalid YAML"}},
		{"top-level field", "t.json", `{"tool":[]}`, []string{`unknown top-level field "tool"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := httptool.Load(write(t, tt.file, tt.content), env)
			if err == nil {
				t.Fatalf("got no error, want %v", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err.Error(), w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q contains the secret", err.Error())
			}
		})
	}
}

const decl = `
tools:
  - namespace: Svc
    method: charge
    description: Create a charge.
    url: "%URL%/charges/{customer}?note={note}"
    headers:
      Authorization: "Bearer ${SVC_TOKEN}"
    input_schema:
      type: object
      properties:
        customer: {type: string}
        note: {type: string}
        amount: {type: integer}
      required: [customer, amount]
    timeout: 300ms
    reconcile:
      method: GET
      url: "%URL%/charges?idempotency_key={key}"
  - namespace: Svc
    method: lookup
    read_only: true
    url: "%URL%/customers/{id}"
    headers:
      X-Api-Key: "literal-api-key-123"
`

func loadDecl(t *testing.T, svc *fakesvc.Server) map[string]*hostfuncs.Tool {
	t.Helper()
	return loadTools(t, svc.URL(), decl)
}

func TestLoadJSONAndYAMLAgree(t *testing.T) {
	y := "- namespace: A\n  method: b\n  url: https://x/{id}\n  read_only: true\n  input_schema: {type: object, properties: {id: {type: string}}}\n"
	j := `[{"namespace":"A","method":"b","url":"https://x/{id}","read_only":true,"input_schema":{"type":"object","properties":{"id":{"type":"string"}}}}]`
	ty, err := httptool.Load(write(t, "a.yml", y), env)
	if err != nil {
		t.Fatal(err)
	}
	tj, err := httptool.Load(write(t, "a.json", j), env)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := scripthost.CanonicalJSON(ty[0].InputSchema)
	b, _ := scripthost.CanonicalJSON(tj[0].InputSchema)
	if string(a) != string(b) || ty[0].Classify(nil) != scripthost.OpRead || tj[0].Classify(nil) != scripthost.OpRead {
		t.Errorf("got %s / %s, want the same read-only tool", a, b)
	}
}

func TestExecuteRequest(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	tools := loadDecl(t, svc)
	charge := tools["Svc.charge"]
	if len(charge.Secrets) != 1 || charge.Secrets[0] != secret {
		t.Errorf("Secrets: got %d values, want the env value", len(charge.Secrets))
	}
	if lk := tools["Svc.lookup"]; len(lk.Secrets) == 0 || lk.Secrets[0] != "literal-api-key-123" {
		t.Errorf("a literal credential header is not among Secrets")
	}
	ctx := hostfuncs.WithIdempotencyKey(context.Background(), "sh_k1")
	out, err := charge.Execute(ctx, json.RawMessage(`{"customer":"a/b c","note":"x&y=z","amount":5}`))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Key   string         `json:"key"`
		Input map[string]any `json:"input"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Key != "sh_k1" || res.Input["amount"] != 5.0 {
		t.Errorf("got %s, want the service's answer echoing key and input", out)
	}
	reqs := svc.Requests()
	r := reqs[len(reqs)-1]
	checks := []struct{ name, got, want string }{
		{"method", r.Method, "POST"},
		{"path", r.Path, "/charges/a/b c"},
		{"query", r.Query, "note=x%26y%3Dz"},
		{"idempotency header", r.Header.Get("Idempotency-Key"), "sh_k1"},
		{"auth header", r.Header.Get("Authorization"), "Bearer " + secret},
		{"content type", r.Header.Get("Content-Type"), "application/json"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	// A read carries no key and no body.
	if _, err := tools["Svc.lookup"].Execute(ctx, json.RawMessage(`{"id":"c1"}`)); err != nil {
		t.Fatal(err)
	}
	reqs = svc.Requests()
	r = reqs[len(reqs)-1]
	if r.Method != "GET" || r.Path != "/customers/c1" || r.Header.Get("Idempotency-Key") != "" || len(r.Body) != 0 || r.Header.Get("X-Api-Key") != "literal-api-key-123" {
		t.Errorf("read: got %s %s key %q body %q", r.Method, r.Path, r.Header.Get("Idempotency-Key"), r.Body)
	}
	// A missing URL field is the caller's mistake.
	_, err = tools["Svc.lookup"].Execute(ctx, json.RawMessage(`{}`))
	if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), `input field "id"`) {
		t.Errorf("got %v, want a logic error naming the field", err)
	}
}

func TestClassification(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	charge := loadDecl(t, svc)["Svc.charge"]
	tests := []struct {
		b         fakesvc.Behavior
		wantClass scripthost.ErrorClass
		wantCode  string
	}{
		{fakesvc.Succeed, "", ""},
		{fakesvc.Fail4xx, scripthost.ClassLogic, ""},
		{fakesvc.Unauthorized, scripthost.ClassAuth, ""},
		{fakesvc.Forbidden, scripthost.ClassPermission, ""},
		{fakesvc.Fail5xx, scripthost.ClassNetwork, ""},
		{fakesvc.ApplyTimeout, scripthost.ClassNetwork, scripthost.CodeTimeout},
		{fakesvc.ApplyDrop, scripthost.ClassNetwork, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.b), func(t *testing.T) {
			svc.Next(tt.b)
			start := time.Now()
			_, err := charge.Execute(hostfuncs.WithIdempotencyKey(context.Background(), "k-"+string(tt.b)), json.RawMessage(`{"customer":"c","amount":1}`))
			if got := scripthost.ClassOf(err); got != tt.wantClass {
				t.Errorf("got class %q (%v), want %q", got, err, tt.wantClass)
			}
			var e *scripthost.Error
			if err != nil {
				if !asErr(err, &e) || e.Code != tt.wantCode {
					t.Errorf("got code %q, want %q", e.Code, tt.wantCode)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q contains the secret", err)
				}
				if !strings.Contains(err.Error(), "Svc.charge") {
					t.Errorf("error %q does not name the tool", err)
				}
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("the 300ms timeout was not applied")
			}
		})
	}
}

func TestStatusClasses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		if code == 200 {
			w.Write([]byte("plain text"))
			return
		}
		if code == 204 {
			w.WriteHeader(204)
			return
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	tools, err := httptool.Load(write(t, "s.json", `[{"namespace":"S","method":"m","url":"`+srv.URL+`/{code}"}]`), env)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		code int
		want scripthost.ErrorClass
		out  string
	}{
		{200, "", `"plain text"`}, {204, "", `null`}, {400, scripthost.ClassLogic, ""}, {404, scripthost.ClassLogic, ""},
		{409, scripthost.ClassLogic, ""}, {422, scripthost.ClassLogic, ""}, {401, scripthost.ClassAuth, ""},
		{403, scripthost.ClassPermission, ""}, {408, scripthost.ClassNetwork, ""}, {429, scripthost.ClassNetwork, ""},
		{500, scripthost.ClassNetwork, ""}, {502, scripthost.ClassNetwork, ""}, {303, scripthost.ClassNetwork, ""},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			out, err := tools[0].Execute(context.Background(), json.RawMessage(fmt.Sprintf(`{"code":%d}`, tt.code)))
			if got := scripthost.ClassOf(err); got != tt.want {
				t.Errorf("got class %q (%v), want %q", got, err, tt.want)
			}
			if err == nil && string(out) != tt.out {
				t.Errorf("got %s, want %s", out, tt.out)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", tt.code)) {
				t.Errorf("got %q, want it to name the status", err)
			}
		})
	}
}

func TestReconcileRequest(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	charge := loadDecl(t, svc)["Svc.charge"]
	ctx := context.Background()
	if _, err := charge.Execute(hostfuncs.WithIdempotencyKey(ctx, "applied-key"), json.RawMessage(`{"customer":"c","amount":1}`)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		rb   fakesvc.ReconcileBehavior
		key  string
		want scripthost.ReconcileOutcome
	}{
		{"applied", fakesvc.ReconcileTruth, "applied-key", scripthost.ReconcileApplied},
		{"not found", fakesvc.ReconcileTruth, "other-key", scripthost.ReconcileFailed},
		{"server error", fakesvc.ReconcileError, "applied-key", scripthost.ReconcileRetryLater},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc.SetReconcile(tt.rb)
			rec, err := charge.Reconcile(ctx, scripthost.Mutation{IdempotencyKey: tt.key, Params: json.RawMessage(`{"customer":"c","amount":1}`)})
			if err != nil || rec.Outcome != tt.want {
				t.Errorf("got %s (%v), want %s", rec.Outcome, err, tt.want)
			}
			if tt.want == scripthost.ReconcileApplied && !strings.Contains(string(rec.Result), `"key":"applied-key"`) {
				t.Errorf("got result %s, want the stored answer", rec.Result)
			}
		})
	}
	reqs := svc.Requests()
	if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("reconcile request auth header: got %q, want the tool's", got)
	}
	svc.Close()
	if _, err := charge.Reconcile(ctx, scripthost.Mutation{IdempotencyKey: "k"}); !scripthost.IsNetwork(err) {
		t.Errorf("service down: got %v, want a network error", err)
	}
}

func asErr(err error, target **scripthost.Error) bool {
	e, ok := err.(*scripthost.Error)
	if ok {
		*target = e
	}
	return ok
}

// TestNoTransportReplay: net/http silently re-sends a request carrying an
// Idempotency-Key header when a reused connection turns out dead. A mutation whose
// connection the service drops after applying must reach the service once.
func TestNoTransportReplay(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	tools := loadDecl(t, svc)
	for i := range 5 {
		ctx := hostfuncs.WithIdempotencyKey(context.Background(), fmt.Sprintf("drop-%d", i))
		// Leave idle keep-alive connections behind, as earlier calls do.
		if _, err := tools["Svc.lookup"].Execute(ctx, json.RawMessage(`{"id":"c"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := tools["Svc.charge"].Execute(ctx, json.RawMessage(`{"customer":"c","amount":1}`)); err != nil {
			t.Fatal(err)
		}
		svc.Next(fakesvc.ApplyDrop)
		_, err := tools["Svc.charge"].Execute(ctx, json.RawMessage(`{"customer":"c","amount":2}`))
		if !scripthost.IsNetwork(err) {
			t.Errorf("got %v, want a network error", err)
		}
		if got := svc.Applies(fmt.Sprintf("drop-%d", i)); got != 2 {
			t.Errorf("got %d applies of the key, want 2 (one per call, no replay)", got)
		}
	}
}

func TestLoadExample(t *testing.T) {
	tools, err := httptool.Load("testdata/tools.yaml", func(n string) (string, bool) { return "sk_test_example", n == "STRIPE_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 {
		t.Fatalf("got %d tools, want 2", len(tools))
	}
	charge, customer := tools[0], tools[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"charge name", charge.Name(), "Stripe.charge"},
		{"charge op", charge.Classify(nil), scripthost.OpMutate},
		{"charge reconciles", charge.Reconcile != nil, true},
		{"charge secret fields", fmt.Sprint(charge.SecretFields), "[card]"},
		{"charge secrets", fmt.Sprint(charge.Secrets), "[sk_test_example]"},
		{"customer op", customer.Classify(nil), scripthost.OpRead},
		{"customer reconciles", customer.Reconcile != nil, false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	reg := hostfuncs.NewRegistry()
	if err := reg.Register(tools...); err != nil {
		t.Errorf("Register: %v", err)
	}
}
