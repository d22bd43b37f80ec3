package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

// hookEnv is the variable the tool file reads its URL secret from.
const hookEnv = "FAKESVC_HOOK"

// e2eHook is a webhook token in the URL path, with characters that would leave its
// segment unescaped; it looks like no credential format, so only its registration as
// a tool secret keeps it out of what the host writes.
const e2eHook = "hk/Sec@ret..e2e+77"

// TestSecretURLNeverWritten runs a charge whose URL path holds a secret from the
// environment against a service that echoes the path in every answer, with verbose
// logging and lifecycle events on stdout, and greps everything the host wrote for the
// secret in any form: output, logs, events, listings, runs shown in full, error
// messages and the ledger's files byte for byte.
func TestSecretURLNeverWritten(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	t.Setenv(hookEnv, e2eHook)
	var mu sync.Mutex
	status, paths := http.StatusOK, []string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		st := status
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		fmt.Fprintf(w, `{"id":"ch_1","path":%q,"raw":%q}`, r.URL.Path, r.URL.EscapedPath())
	}))
	defer srv.Close()
	j, _ := json.Marshal(e2eHook)
	forms := []string{e2eHook, url.PathEscape(e2eHook), url.QueryEscape(e2eHook), string(j[1 : len(j)-1]), "hk%2FSec%40ret..e2e%2B77", "Sec@ret..e2e"}

	for _, tc := range []struct {
		name   string
		status int
		want   scripthost.MutationStatus
	}{
		{"applied", http.StatusOK, scripthost.MutationApplied},
		{"indeterminate", http.StatusBadGateway, scripthost.MutationIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			status, paths = tc.status, nil
			mu.Unlock()
			e := newHTTPEnv(t, srv.URL, "tools-blind.json", 1, "2s")
			b, _ := os.ReadFile(e.tools)
			withHook := strings.Replace(string(b), "/v1/charges/{charge}", "/v1/hooks/${"+hookEnv+"}/charges/{charge}", 1)
			writeFile(t, e.tools, withHook)
			var written strings.Builder
			code, out, errOut := e.run("--verbose", "--jsonl")
			written.WriteString(out + errOut)
			if !passDone(code) {
				t.Fatalf("run: got exit %d\n%s", code, errOut)
			}
			ms := e.mutations()
			if len(ms) == 0 || ms[0].Status != tc.want {
				t.Fatalf("got mutations %+v, want the first %s", ms, tc.want)
			}
			mu.Lock()
			if len(paths) == 0 || !strings.HasPrefix(paths[0], "/v1/hooks/"+e2eHook+"/charges/") {
				t.Errorf("the service got paths %q, want the secret in its segment", paths)
			}
			mu.Unlock()
			for _, args := range [][]string{{"runs"}, {"mutations"}, {"events"}, {"runs", "--json"}, {"mutations", "--json"}} {
				_, out, errOut := cli(t, "", append([]string{"--db", e.db}, args...)...)
				written.WriteString(out + errOut)
			}
			var runs []scripthost.Run
			e.listJSON(&runs, "runs")
			for _, r := range runs {
				_, out, errOut := cli(t, "", "--db", e.db, "show", r.ID)
				written.WriteString(out + errOut + r.Error)
			}
			for _, m := range ms {
				written.WriteString(m.Error + string(m.Result))
			}
			for _, f := range forms {
				if strings.Contains(written.String(), f) {
					t.Errorf("the secret appears as %q in what the host printed:\n%s", f, written.String())
				}
			}
			// The echo did reach the host: it shows up, redacted.
			if !strings.Contains(written.String(), "/v1/hooks/"+hostfuncs.Redacted+"/charges/") {
				t.Errorf("the echoed path was not shown redacted:\n%s", written.String())
			}
			files, _ := filepath.Glob(e.db + "*")
			for _, file := range files {
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range forms {
					if bytes.Contains(b, []byte(f)) {
						t.Errorf("the secret appears as %q in the ledger file %s", f, filepath.Base(file))
					}
				}
			}
		})
	}
}
