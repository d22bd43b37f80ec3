package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// serveToken is the bearer token the serve tests start with.
const testServeToken = "test-token-0123456789abcdef"

// served is a `scripthost serve` running in this process.
type served struct {
	t      *testing.T
	base   string
	stop   context.CancelFunc
	done   chan int
	stderr *lockedBuffer
}

var servingOn = regexp.MustCompile(`serving on (https?://\S+)`)

// startServe runs serve with args (after --db db serve) on an ephemeral loopback port
// and waits until it listens. Stopping it is what SIGTERM does to the real process.
func startServe(t *testing.T, db string, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, stop: cancel, done: make(chan int, 1), stderr: &lockedBuffer{}}
	full := append([]string{"--db", db, "serve", "--listen", "127.0.0.1:0", "--poll", "50ms", "--grace", "10s"}, args...)
	go func() { s.done <- execute(ctx, full, strings.NewReader(""), io.Discard, s.stderr) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := servingOn.FindStringSubmatch(s.stderr.String()); m != nil {
			s.base = m[1]
			break
		}
		select {
		case code := <-s.done:
			t.Fatalf("serve exited with %d before listening:\n%s", code, s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen:\n%s", s.stderr.String())
		}
	}
	t.Cleanup(func() { s.close() })
	return s
}

// close stops serve and returns its exit code.
func (s *served) close() int {
	s.stop()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(30 * time.Second):
		s.t.Fatalf("serve did not stop:\n%s", s.stderr.String())
		return -1
	}
}

// call makes an API request with token (none when empty) and returns the status and body.
func (s *served) call(method, path, token string, body any) (int, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// get fetches path with the token, wants 200 and decodes the body into v.
func (s *served) get(path string, v any) {
	s.t.Helper()
	s.want("GET", path, nil, http.StatusOK, v)
}

// want makes an authorized request, checks its status and decodes the body into v.
func (s *served) want(method, path string, body any, status int, v any) {
	s.t.Helper()
	code, b := s.call(method, path, testServeToken, body)
	if code != status {
		s.t.Fatalf("%s %s: got %d, want %d: %s", method, path, code, status, b)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			s.t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
}

// cliJSON runs a CLI command on db and decodes its JSON output as generic JSON.
func cliJSON(t *testing.T, db string, args ...string) any {
	t.Helper()
	code, out, errOut := cli(t, "", append([]string{"--db", db}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return v
}

// sameAsCLI checks that an API listing equals the CLI's --json output.
func sameAsCLI(t *testing.T, s *served, path string, db string, args ...string) {
	t.Helper()
	var api any
	s.get(path, &api)
	if cliOut := cliJSON(t, db, args...); !reflect.DeepEqual(api, cliOut) {
		a, _ := json.Marshal(api)
		c, _ := json.Marshal(cliOut)
		t.Errorf("GET %s differs from scripthost %s:\napi: %s\ncli: %s", path, strings.Join(args, " "), a, c)
	}
}

// failingWorkflow is a producer that always fails: a run to retry.
const failingWorkflow = `export default {
  name: 'broken',
  producers: { tick: { schedule: { every: '1h' }, handler() { throw new Error('boom'); } } },
};
`

// TestServeAPI starts serve on a ledger holding an indeterminate mutation, a failed run
// and a plan execution, and checks the token, every listing against the CLI's --json
// output, and every action, recorded with who did it.
func TestServeAPI(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	e, svc, m := indeterminate(t, fakesvc.ApplyDrop)
	broken := filepath.Join(e.dir, "broken.js")
	writeFile(t, broken, failingWorkflow)
	if code, _, errOut := cli(t, "", "--db", e.db, "run", broken, "--once"); code != exitBlocked {
		t.Fatalf("broken: got exit %d, want %d: %s", code, exitBlocked, errOut)
	}
	ws, _ := tidyWorkspace(t)
	if code, _, errOut := cli(t, "", "--db", e.db, "plan", "run", tidyPlan, "--approve", "--by", "ci",
		"--workspace", ws, "--non-interactive=approve", "--allow-read-only", "wc"); code != 0 {
		t.Fatalf("plan run: exit %d: %s", code, errOut)
	}
	s := startServe(t, e.db, e.wf, broken, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken)

	t.Run("token", func(t *testing.T) {
		for _, path := range []string{"/api/v1/runs", "/api/v1/mutations", "/metrics"} {
			if code, body := s.call("GET", path, "", nil); code != http.StatusUnauthorized {
				t.Errorf("GET %s without a token: got %d, want 401: %s", path, code, body)
			}
			if code, body := s.call("GET", path, "wrong-token-0123456789", nil); code != http.StatusUnauthorized {
				t.Errorf("GET %s with a wrong token: got %d, want 401: %s", path, code, body)
			}
		}
		if code, body := s.call("POST", "/api/v1/workflows/broken/pause", "wrong", nil); code != http.StatusUnauthorized {
			t.Errorf("pause with a wrong token: got %d: %s", code, body)
		}
		if code, _ := s.call("GET", "/", "", nil); code != http.StatusOK {
			t.Errorf("the UI page: got %d, want 200 without a token (it holds no data)", code)
		}
	})

	var charge []scripthost.Run
	s.get("/api/v1/runs?handler=charge", &charge)
	var failed []scripthost.Run
	s.get("/api/v1/runs?workflow=broken&status=failed:logic", &failed)
	if len(charge) != 1 || len(failed) != 1 {
		t.Fatalf("got %d charge runs and %d failed broken runs, want 1 and 1", len(charge), len(failed))
	}
	run := charge[0]

	t.Run("listings are the CLI's", func(t *testing.T) {
		sameAsCLI(t, s, "/api/v1/runs", e.db, "runs", "--json")
		sameAsCLI(t, s, "/api/v1/runs?workflow=broken&limit=1", e.db, "runs", "--workflow", "broken", "--limit", "1", "--json")
		sameAsCLI(t, s, "/api/v1/runs?status=paused:reconciliation", e.db, "runs", "--status", "paused:reconciliation", "--json")
		sameAsCLI(t, s, "/api/v1/runs/"+run.ID, e.db, "show", run.ID)
		sameAsCLI(t, s, "/api/v1/mutations", e.db, "mutations", "--json")
		sameAsCLI(t, s, "/api/v1/mutations?status=indeterminate", e.db, "mutations", "--status", "indeterminate", "--json")
		sameAsCLI(t, s, "/api/v1/mutations/indeterminate", e.db, "mutations", "--status", "indeterminate", "--json")
		sameAsCLI(t, s, "/api/v1/events?topic=charges", e.db, "events", "--topic", "charges", "--json")
		sameAsCLI(t, s, "/api/v1/executions/tidy/1", e.db, "plan", "show", "tidy/1", "--json")

		// show --events --json prints JSON lines; the API gives them as an array.
		_, out, _ := cli(t, "", "--db", e.db, "show", run.ID, "--events", "--json")
		var lines []any
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, v)
		}
		var api []any
		s.get("/api/v1/runs/"+run.ID+"/events", &api)
		if !reflect.DeepEqual(api, lines) || len(lines) == 0 {
			t.Errorf("run events: api %v, cli %v", api, lines)
		}
	})

	t.Run("other listings", func(t *testing.T) {
		var wfs []struct {
			Name     string `json:"name"`
			Paused   bool   `json:"paused"`
			Versions []any  `json:"versions"`
			Handlers []struct {
				Name, Kind, Schedule string
			} `json:"handlers"`
			Schedules []any `json:"schedules"`
		}
		s.get("/api/v1/workflows", &wfs)
		if len(wfs) != 2 || wfs[0].Name != "broken" || len(wfs[1].Handlers) != 2 || wfs[1].Handlers[0].Name != "seed" ||
			wfs[1].Handlers[0].Schedule == "" || len(wfs[1].Versions) != 1 || len(wfs[1].Schedules) != 1 {
			t.Errorf("workflows: got %+v", wfs)
		}
		var xs []struct {
			ID    string `json:"id"`
			Steps int    `json:"steps"`
		}
		s.get("/api/v1/executions", &xs)
		if len(xs) != 1 || xs[0].ID != "tidy/1" || xs[0].Steps == 0 {
			t.Errorf("executions: got %+v", xs)
		}
		var one map[string]any
		s.get("/api/v1/mutations/"+m.ID, &one)
		if one["idempotency_key"] != m.IdempotencyKey {
			t.Errorf("mutation: got %v", one)
		}
		for path, want := range map[string]int{
			"/api/v1/runs/nope":             http.StatusNotFound,
			"/api/v1/mutations/nope":        http.StatusNotFound,
			"/api/v1/runs?status=bogus":     http.StatusBadRequest,
			"/api/v1/runs?since=yesterday":  http.StatusBadRequest,
			"/api/v1/mutations?status=nope": http.StatusBadRequest,
			"/api/v1/executions/x/0":        http.StatusBadRequest,
			"/api/v1/nothing":               http.StatusNotFound,
		} {
			if code, body := s.call("GET", path, testServeToken, nil); code != want {
				t.Errorf("GET %s: got %d, want %d: %s", path, code, want, body)
			}
		}
		var none []scripthost.Run
		s.get("/api/v1/runs?since="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), &none)
		if len(none) != 0 {
			t.Errorf("runs since an hour from now: got %d", len(none))
		}
	})

	t.Run("actions", func(t *testing.T) {
		var wf struct{ Paused bool }
		s.want("POST", "/api/v1/workflows/broken/pause", map[string]any{"by": "alice"}, http.StatusOK, &wf)
		if !wf.Paused {
			t.Error("pause: the workflow is not paused")
		}
		s.want("POST", "/api/v1/workflows/broken/resume", map[string]any{"by": "alice"}, http.StatusOK, &wf)
		if wf.Paused {
			t.Error("resume: the workflow is still paused")
		}
		s.want("POST", "/api/v1/workflows/nope/pause", nil, http.StatusNotFound, nil)
		// A run whose mutation outcome is unknown is resolved, not retried.
		s.want("POST", "/api/v1/runs/"+run.ID+"/retry", map[string]any{"by": "bob"}, http.StatusConflict, nil)
		var rt struct{ Source, Retry scripthost.Run }
		s.want("POST", "/api/v1/runs/"+failed[0].ID+"/retry", map[string]any{"by": "bob"}, http.StatusOK, &rt)
		if rt.Retry.RetryOf != failed[0].ID || rt.Retry.ID == failed[0].ID {
			t.Errorf("retry: got %+v", rt.Retry)
		}
		s.want("POST", "/api/v1/mutations/"+m.ID+"/resolve", map[string]any{"as": "maybe"}, http.StatusBadRequest, nil)
		s.want("POST", "/api/v1/mutations/"+m.ID+"/resolve", map[string]any{"as": "applied", "bogus": 1}, http.StatusBadRequest, nil)
		var res struct {
			Status     string `json:"status"`
			ResolvedBy string `json:"resolved_by"`
		}
		s.want("POST", "/api/v1/mutations/"+m.ID+"/resolve", map[string]any{"as": "applied", "result": map[string]string{"id": "ch_api"}, "by": "carol"},
			http.StatusOK, &res)
		if res.Status != "applied" || res.ResolvedBy != "carol" {
			t.Errorf("resolve: got %+v", res)
		}
		// The host running in serve takes the run on at once.
		waitFor(t, func() bool {
			var r struct{ Run scripthost.Run }
			s.get("/api/v1/runs/"+run.ID, &r)
			return r.Run.Status == scripthost.StatusCommitted
		})
		if n := svc.Total(); n != 1 {
			t.Errorf("the service applied %d charges, want 1", n)
		}
		var acts []struct {
			Action, Target, By string
			Success            bool
		}
		s.get("/api/v1/actions", &acts)
		want := []string{"pause broken alice true", "resume broken alice true", "pause nope api false",
			"retry " + run.ID + " bob false", "retry " + failed[0].ID + " bob true", "resolve " + m.ID + " carol true"}
		var got []string
		for _, a := range acts {
			got = append(got, fmt.Sprintf("%s %s %s %v", a.Action, a.Target, a.By, a.Success))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("actions:\ngot  %q\nwant %q", got, want)
		}
	})
	if code := s.close(); code != 0 {
		t.Errorf("serve exited %d, want 0:\n%s", code, s.stderr.String())
	}
}

// waitFor polls cond until it holds, failing the test after 20 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeRefusesRemoteWithoutTLS checks that a non-loopback address needs TLS or
// --allow-remote, and that a missing token is generated once, printed, kept beside the
// ledger and used again on the next start.
func TestServeRefusesRemoteWithoutTLS(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ledger.db")
	code, _, errOut := cli(t, "", "--db", db, "serve", "--listen", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errOut, "--allow-remote") {
		t.Errorf("non-loopback without TLS: got exit %d, %q; want 2 naming --tls-cert and --allow-remote", code, errOut)
	}
	code, _, errOut = cli(t, "", "--db", db, "serve", "--token", "short")
	if code != 2 || !strings.Contains(errOut, "at least 16") {
		t.Errorf("short token: got exit %d, %q", code, errOut)
	}
	code, _, errOut = cli(t, "", "--db", db, "--log-format", "yaml", "runs")
	if code != 2 || !strings.Contains(errOut, "--log-format") {
		t.Errorf("--log-format yaml: got exit %d, %q", code, errOut)
	}

	t.Setenv(serveTokenEnv, "")
	s := startServe(t, db)
	m := regexp.MustCompile(`saved in (\S+) \(log in with it\):\n([0-9a-f]{48})\n`).FindStringSubmatch(s.stderr.String())
	if m == nil || m[1] != db+".token" {
		t.Fatalf("no generated token printed:\n%s", s.stderr.String())
	}
	token := m[2]
	if code, body := s.call("GET", "/api/v1/workflows", token, nil); code != http.StatusOK {
		t.Errorf("the generated token: got %d: %s", code, body)
	}
	s.close()
	s2 := startServe(t, db)
	if strings.Contains(s2.stderr.String(), "generated") {
		t.Error("the second start generated another token")
	}
	if code, _ := s2.call("GET", "/api/v1/runs", token, nil); code != http.StatusOK {
		t.Errorf("the saved token on the second start: got %d", code)
	}
}

// TestServeTLS serves HTTPS with a certificate and key given on the command line.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))

	s := startServe(t, filepath.Join(dir, "ledger.db"), "--token", testServeToken, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.base, "https://") {
		t.Fatalf("serving on %s, want https", s.base)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", s.base+"/api/v1/workflows", nil)
	req.Header.Set("Authorization", "Bearer "+testServeToken)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET over TLS: %d", res.StatusCode)
	}
}
