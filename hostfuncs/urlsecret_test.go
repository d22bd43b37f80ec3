package hostfuncs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/ledger"
)

// webhookSecret is a webhook token from the environment, in the URL's path. It has
// characters that escaping changes, so that escaped copies are caught too.
const webhookSecret = "wh/Sec@ret..tok+en=99"

// TestURLSecretNeverStored: a webhook whose secret is in its URL path, called through
// the wrapper when the service fails with a 500 that echoes the path, when it answers
// with the path in its result, and when nothing listens: the service receives the
// secret, and no ledger row or file, error, result or log line holds it in any form.
func TestURLSecretNeverStored(t *testing.T) {
	fail := true
	var got []string
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		body, _ := json.Marshal(map[string]string{"hook": r.URL.Path, "raw": r.URL.EscapedPath()})
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write(body)
	}))
	defer svc.Close()
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()

	decl := "- {namespace: Hook, method: post, url: \"" + svc.URL + "/services/${WEBHOOK_TOKEN}\"}\n" +
		"- {namespace: Hook, method: down, url: \"" + downURL + "/services/${WEBHOOK_TOKEN}\"}\n"
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(decl), 0o600); err != nil {
		t.Fatal(err)
	}
	tools, err := httptool.Load(path, func(name string) (string, bool) { return webhookSecret, name == "WEBHOOK_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	reg := hostfuncs.NewRegistry()
	mustRegister(t, reg, tools...)
	s, dbPath := openStore(t)
	var logs logBuffer
	ctx := context.Background()

	var texts []string
	for _, c := range []struct {
		method string
		fail   bool
		status scripthost.MutationStatus
	}{
		{"post", true, scripthost.MutationIndeterminate},
		{"post", false, scripthost.MutationApplied},
		{"down", false, scripthost.MutationNeedsReconcile}, // never sent: sent again later
	} {
		fail = c.fail
		r := mutatingRun(t, s)
		w := wrapperFor(reg, s, &r, hostfuncs.WrapperOptions{Logger: debugLogger(&logs)})
		w.SetPhase(scripthost.PhaseMutate)
		out, err := w.Call(ctx, "Hook", c.method, json.RawMessage(`{"text":"hello"}`))
		m, gerr := s.RunMutation(ctx, r.ID)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if m.Status != c.status {
			t.Errorf("%s (fail %v): got status %s (%v), want %s", c.method, c.fail, m.Status, err, c.status)
		}
		row, _ := json.Marshal(m)
		texts = append(texts, string(out), string(row))
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	if len(got) != 2 || got[0] != "/services/"+webhookSecret {
		t.Errorf("the service got paths %q, want the secret in one segment twice", got)
	}
	ms, err := s.Mutations(ctx, ledger.MutationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		row, _ := json.Marshal(m)
		texts = append(texts, string(row))
	}
	if !strings.Contains(strings.Join(texts, "\n"), hostfuncs.Redacted) {
		t.Errorf("nothing was redacted: %q", texts)
	}
	texts = append(texts, logs.String())
	s.Close()
	files, _ := filepath.Glob(dbPath + "*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(data))
	}
	for i, text := range texts {
		for _, form := range webhookForms() {
			if strings.Contains(text, form) {
				t.Errorf("text %d holds the secret as %q: %.300s", i, form, text)
			}
		}
	}
	if !bytes.Contains([]byte(logs.String()), []byte("mutation in flight")) {
		t.Errorf("logs were not captured")
	}
}

// webhookForms are the ways webhookSecret could appear: as it is, escaped for a URL
// path, a query or every reserved character, and inside a JSON string.
func webhookForms() []string {
	j, _ := json.Marshal(webhookSecret)
	return []string{webhookSecret, url.PathEscape(webhookSecret), url.QueryEscape(webhookSecret),
		"wh%2FSec%40ret..tok%2Ben%3D99", string(j[1 : len(j)-1]), "Sec@ret..tok"}
}
