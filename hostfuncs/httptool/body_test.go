package httptool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// loadTools loads a declaration with %URL% replaced by base, by tool name.
func loadTools(t *testing.T, base, content string) map[string]*hostfuncs.Tool {
	t.Helper()
	tools, err := httptool.Load(write(t, "tools.yaml", strings.ReplaceAll(content, "%URL%", base)), env)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*hostfuncs.Tool{}
	for _, tl := range tools {
		out[tl.Name()] = tl
	}
	return out
}

const bodyDecl = `
- {namespace: B, method: json, url: "%URL%/c/{customer}?note={note}"}
- {namespace: B, method: repeat, url: "%URL%/c/{customer}", repeat_in_body: [customer]}
- {namespace: B, method: form, url: "%URL%/c/{customer}", body: form}
- {namespace: B, method: raw, url: "%URL%/upload/{name}", http_method: PUT, body: raw, content_type: text/csv, body_field: csv}
- {namespace: B, method: none, url: "%URL%/ping/{id}", body: none}
- {namespace: B, method: list, read_only: true, url: "%URL%/v1/customers/{customer}/charges", body: query}
- {namespace: B, method: vendor, url: "%URL%/v", content_type: application/vnd.api+json}
- namespace: B
  method: header
  url: "%URL%/h"
  headers: {Stripe-Account: "{account}", X-Request-Id: "req-{key}", X-Json: '{"a":1}', Authorization: "Bearer ${SVC_TOKEN}"}
`

// TestBodyModes: each body mode sends the fields the URL does not take (unless
// repeated) in its encoding and content type, and says where a field has no place.
func TestBodyModes(t *testing.T) {
	svc := fakesvc.New()
	defer svc.Close()
	tools := loadTools(t, svc.URL(), bodyDecl)
	in := `{"customer":"cus 1","note":"n","amount":2000,"metadata":{"order":"o1"},"items":[{"price":"p1"}],"ok":true}`
	tests := []struct {
		tool, input     string
		path, query, ct string
		body            string
		formBrackets    bool
	}{
		{"B.json", in, "/c/cus 1", "note=n", "application/json", `{"amount":2000,"items":[{"price":"p1"}],"metadata":{"order":"o1"},"ok":true}`, false},
		{"B.repeat", `{"customer":"c1","amount":5}`, "/c/c1", "", "application/json", `{"amount":5,"customer":"c1"}`, false},
		{"B.form", `{"customer":"c1","amount":2000,"metadata":{"order":"o1"},"items":[{"price":"p1"}],"ok":true,"note":"a&b"}`, "/c/c1", "", "application/x-www-form-urlencoded",
			"amount=2000&items[0][price]=p1&metadata[order]=o1&note=a%26b&ok=true", true},
		{"B.raw", `{"name":"r.csv","csv":"a,b\n1,2\n"}`, "/upload/r.csv", "", "text/csv", "a,b\n1,2\n", false},
		{"B.none", `{"id":"x","ignored":1}`, "/ping/x", "", "", "", false},
		{"B.vendor", `{"a":"<b>&"}`, "/v", "", "application/vnd.api+json", `{"a":"<b>&"}`, false},
		{"B.header", `{"account":"acct_1","amount":5}`, "/h", "", "application/json", `{"amount":5}`, false},
		{"B.list", `{"customer":"cus_1","limit":3,"created":{"gte":1700000000},"expand":["data.customer"]}`, "/v1/customers/cus_1/charges",
			"created%5Bgte%5D=1700000000&expand%5B0%5D=data.customer&limit=3", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ctx := hostfuncs.WithIdempotencyKey(context.Background(), "k-"+tt.tool)
			if _, err := tools[tt.tool].Execute(ctx, json.RawMessage(tt.input)); err != nil {
				t.Fatal(err)
			}
			reqs := svc.Requests()
			r := reqs[len(reqs)-1]
			body := string(r.Body)
			if tt.formBrackets {
				body = strings.NewReplacer("%5B", "[", "%5D", "]").Replace(body)
			}
			checks := []struct{ name, got, want string }{
				{"path", r.Path, tt.path},
				{"query", r.Query, tt.query},
				{"content type", r.Header.Get("Content-Type"), tt.ct},
				{"body", body, tt.body},
				{"key (a read has none)", r.Header.Get("Idempotency-Key"), map[bool]string{true: "", false: "k-" + tt.tool}[tt.tool == "B.list"]},
			}
			if tt.tool == "B.header" {
				checks = append(checks, []struct{ name, got, want string }{
					{"header from a field", r.Header.Get("Stripe-Account"), "acct_1"},
					{"header from the key", r.Header.Get("X-Request-Id"), "req-k-B.header"},
					{"braces that are no field", r.Header.Get("X-Json"), `{"a":1}`},
					{"header from the environment", r.Header.Get("Authorization"), "Bearer " + secret},
				}...)
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
				}
			}
		})
	}
	// The same input is the same body, byte for byte, whatever the order of its fields.
	var bodies []string
	for _, input := range []string{`{"b":1,"a":{"y":2,"x":1},"customer":"c"}`, `{"customer":"c","a":{"x":1,"y":2},"b":1}`} {
		for _, name := range []string{"B.json", "B.form"} {
			if _, err := tools[name].Execute(hostfuncs.WithIdempotencyKey(context.Background(), "same"), json.RawMessage(input)); err != nil {
				t.Fatal(err)
			}
			reqs := svc.Requests()
			bodies = append(bodies, string(reqs[len(reqs)-1].Body))
		}
	}
	if bodies[0] != bodies[2] || bodies[1] != bodies[3] {
		t.Errorf("one input in another field order gave other bodies: %q", bodies)
	}

	errs := []struct{ tool, input, want string }{
		{"B.raw", `{"name":"r.csv","csv":5}`, `raw body: input field "csv" must be a string`},
		{"B.raw", `{"name":"r.csv","csv":"x","extra":1,"more":2}`, `input fields extra, more have no place in the request (the url and headers take name, the body only "csv")`},
		{"B.form", `{"customer":"c","metadata":{"a[b]":"x"}}`, `form body: key "a[b]" at metadata`},
		{"B.header", `{"amount":5}`, `input field "account" is needed by header Stripe-Account`},
		{"B.header", `{"account":"a\r\nX-Evil: 1"}`, "header Stripe-Account: the value from the input is not a valid header value"},
	}
	before := len(svc.Requests())
	for _, e := range errs {
		_, err := tools[e.tool].Execute(hostfuncs.WithIdempotencyKey(context.Background(), "bad"), json.RawMessage(e.input))
		if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), e.want) || !strings.Contains(err.Error(), e.tool) {
			t.Errorf("%s %s: got %v, want a logic error naming the tool and containing %q", e.tool, e.input, err, e.want)
		}
	}
	if n := len(svc.Requests()); n != before {
		t.Errorf("refused inputs reached the service: %d requests", n-before)
	}
}

func TestLoadBodyErrors(t *testing.T) {
	base := "- namespace: Svc\n  method: charge\n  url: http://x/c/{id}\n"
	tests := []struct{ name, extra, want string }{
		{"unknown body", "  body: xml\n", `body "xml": want json, form, query, raw or none`},
		{"raw without type", "  body: raw\n", "body raw: missing content_type"},
		{"type without body", "  body: none\n  content_type: text/plain\n", "a tool with body none sends no body"},
		{"bad type", "  content_type: 'text/'\n", `content_type "text/"`},
		{"body_field without raw", "  body_field: data\n", "only a raw body is taken from one field"},
		{"repeat a non-url field", "  repeat_in_body: [amount]\n", `repeat_in_body: "amount" is not a field of the url`},
		{"env and field in a header", "  headers: {X-A: '${SVC_TOKEN}-{id}'}\n", "header X-A: ${NAME} and {field} in one value"},
		{"header field not in schema", "  input_schema: {type: object, properties: {id: {type: string}}}\n  headers: {X-A: '{acct}'}\n", "header X-A: {acct} is not a property of the input schema"},
		{"two content types", "  content_type: text/plain\n  headers: {content-type: text/csv}\n", "Content-Type and content_type both given"},
		{"replay with url", "  reconcile: {strategy: replay, url: 'http://x/{key}'}\n", "strategy replay re-sends the tool's own request"},
		{"replay with secrets", "  secret_fields: [card]\n  reconcile: {strategy: replay}\n", "secret_fields [card] are redacted"},
		{"unknown strategy", "  reconcile: {strategy: ask}\n", `strategy "ask": want lookup`},
		{"lookup without url", "  reconcile: {strategy: lookup}\n", "reconcile: missing url (or declare strategy: replay)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := httptool.Load(write(t, "t.yaml", base+tt.extra), env)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "Svc.charge") {
				t.Errorf("got %v, want an error naming the tool and containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadReadErrors(t *testing.T) {
	tests := []struct{ decl, want string }{
		{"- {namespace: Svc, method: get, read_only: true, url: 'http://x/', headers: {X-Request-Id: '{key}'}}\n",
			"header X-Request-Id: {key} is the idempotency key, which a read-only tool does not have"},
		{"- {namespace: Svc, method: get, read_only: true, url: 'http://x/?a=1', body: query}\n", "body query: the url has a query already"},
	}
	for _, tt := range tests {
		_, err := httptool.Load(write(t, "t.yaml", tt.decl), env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want an error containing %q", err, tt.want)
		}
	}
}
