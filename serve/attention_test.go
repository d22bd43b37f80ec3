package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

const testToken = "0123456789abcdef0123"

// failedRunLedger stores a workflow whose consumer bill failed, at clock's time.
func failedRunLedger(t *testing.T, clock func() time.Time) (ledger.Store, scripthost.Run) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), sqlite.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sum := sha256.Sum256([]byte("src"))
	def := `{"topics":["in"],"consumers":{"bill":{"subscribe":["in"],"prepare":"consumers.bill.prepare"}}}`
	if _, err := s.PutWorkflow(ctx, ledger.WorkflowVersion{Workflow: "orders", Language: "js", Path: "/w/orders.js", Source: []byte("src"),
		Hash: hex.EncodeToString(sum[:]), Definition: json.RawMessage(def)}); err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRun(ctx, ledger.NewRun{Workflow: "orders", Version: 1, Handler: "bill", Kind: scripthost.KindConsumer})
	if err != nil {
		t.Fatal(err)
	}
	if r, err = s.SetRunStatus(ctx, r.ID, ledger.StatusChange{Status: scripthost.StatusFailedLogic, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	return s, r
}

func getJSON(t *testing.T, base, path string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestAttentionAndOverviewAPI serves a ledger with a failed run over loopback and
// checks that /api/v1/attention answers exactly what view.NeedsAttention computes at
// the server's clock, that /api/v1/overview covers the window asked for, and that a
// bad window is refused with 400.
func TestAttentionAndOverviewAPI(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store, run := failedRunLedger(t, clock)
	srv, err := New(Config{Store: store, Token: testToken, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	code, body := getJSON(t, ts.URL, "/api/v1/attention")
	if code != http.StatusOK {
		t.Fatalf("attention: %d %s", code, body)
	}
	want, err := view.NeedsAttention(context.Background(), store, view.AttentionOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var wantBody bytes.Buffer
	enc := json.NewEncoder(&wantBody)
	enc.SetIndent("", "  ")
	_ = enc.Encode(want)
	if !bytes.Equal(body, wantBody.Bytes()) {
		t.Errorf("attention: got\n%s\nwant\n%s", body, wantBody.Bytes())
	}
	if want.Counts.FailedRuns != 1 || want.Counts.Blocked != 1 || want.Blocked[0].RunID != run.ID {
		t.Errorf("attention: got %+v, want run %s failed and blocking bill", want.Counts, run.ID)
	}

	code, body = getJSON(t, ts.URL, "/api/v1/overview?window=2h")
	var o view.Overview
	if err := json.Unmarshal(body, &o); code != http.StatusOK || err != nil {
		t.Fatalf("overview: %d %s", code, body)
	}
	if o.WindowSeconds != 7200 || o.Runs[string(scripthost.StatusFailedLogic)] != 1 || o.FailuresPerSecond != 1.0/7200 {
		t.Errorf("overview: got %+v, want a 2h window with the failed run", o)
	}
	if code, body = getJSON(t, ts.URL, "/api/v1/overview?window=soon"); code != http.StatusBadRequest || !bytes.Contains(body, []byte(`window=\"soon\"`)) {
		t.Errorf("overview?window=soon: got %d %s, want 400 naming the window", code, body)
	}
}
