package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/serve"
)

const probeToken = "probe-token-0123456789"

// TestProbesAndMetricsAuth: /healthz answers without the token while the process
// runs; /readyz answers 200 while the ledger answers and 503 once it does not;
// /metrics wants the token unless MetricsPublic opens it.
func TestProbesAndMetricsAuth(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "scripthost_up 1\n") })
	start := func(public bool) string {
		srv, err := serve.New(serve.Config{Store: st, Token: probeToken, Metrics: metrics, MetricsPublic: public})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(hs.Close)
		return hs.URL
	}
	call := func(url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	closed, open := start(false), start(true)
	for _, c := range []struct {
		url, token string
		want       int
	}{
		{closed + "/healthz", "", 200},
		{closed + "/readyz", "", 200},
		{closed + "/metrics", "", 401},
		{closed + "/metrics", probeToken, 200},
		{open + "/metrics", "", 200},
	} {
		if code, body := call(c.url, c.token); code != c.want {
			t.Errorf("GET %s (token %v): %d %q, want %d", c.url, c.token != "", code, body, c.want)
		}
	}
	st.Close()
	if code, body := call(closed+"/readyz", ""); code != 503 || body != "ledger unreachable\n" {
		t.Errorf("readyz with the ledger closed: %d %q, want 503", code, body)
	}
	if code, _ := call(closed+"/healthz", ""); code != 200 {
		t.Errorf("healthz with the ledger closed: %d, want 200 (the process is up)", code)
	}
}
