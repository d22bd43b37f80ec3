package httptool_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// TestPathFieldOneSegment: a URL path field is one segment. A value that is a dot
// segment once decoded (however many times), or that holds one between slashes, is
// refused naming the field, and nothing is sent; any other value, slashes included,
// arrives escaped inside the one segment.
func TestPathFieldOneSegment(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tools := loadTools(t, srv.URL, `
- namespace: Svc
  method: get
  read_only: true
  url: "%URL%/v1/customers/{id}/cards?expand={expand}"
- namespace: Svc
  method: refund
  url: "%URL%/v1/charges/{id}/refund"
`)
	tests := []struct {
		id     string
		refuse bool
		path   string // the escaped path the service sees when sent
	}{
		{"..", true, ""},
		{".", true, ""},
		{"%2e%2e", true, ""},
		{"%2E.", true, ""},
		{".%2E", true, ""},
		{"%252e%252e", true, ""},
		{"..%2f", true, ""},
		{"..%2F..%2Fadmin", true, ""},
		{"../admin", true, ""},
		{`..\admin`, true, ""},
		{"..%5cadmin", true, ""},
		{"a/../b", true, ""},
		{"./x", true, ""},
		{"..;", true, ""},
		{"", true, ""},
		{"cus_1", false, "/v1/customers/cus_1/cards"},
		{"a/b", false, "/v1/customers/a%2Fb/cards"},
		{`a\b`, false, "/v1/customers/a%5Cb/cards"},
		{"...", false, "/v1/customers/.../cards"},
		{"..a", false, "/v1/customers/..a/cards"},
		{"a b?c#d", false, "/v1/customers/a%20b%3Fc%23d/cards"},
		{"%2fx", false, "/v1/customers/%252fx/cards"},
	}
	for _, tt := range tests {
		for _, method := range []string{"get", "refund"} {
			t.Run(method+"/"+tt.id, func(t *testing.T) {
				mu.Lock()
				before := len(paths)
				mu.Unlock()
				ctx := hostfuncs.WithIdempotencyKey(context.Background(), "key-1")
				in, _ := json.Marshal(map[string]string{"id": tt.id, "expand": ".."})
				_, err := tools["Svc."+method].Execute(ctx, in)
				mu.Lock()
				sent := paths[before:]
				mu.Unlock()
				if tt.refuse {
					if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), `input field "id"`) {
						t.Errorf("got %v, want a logic error naming input field \"id\"", err)
					}
					if len(sent) != 0 {
						t.Errorf("got requests to %q, want none", sent)
					}
					return
				}
				if err != nil {
					t.Fatalf("got %v, want it sent", err)
				}
				want := tt.path
				if method == "refund" {
					want = strings.Replace(strings.Replace(tt.path, "customers", "charges", 1), "/cards", "/refund", 1)
				}
				if len(sent) != 1 || sent[0] != want {
					t.Errorf("got paths %q, want %q", sent, want)
				}
			})
		}
	}
}
