package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// stripeMockEnv names the stripe-mock binary; `make test` installs one into .tools/.
const stripeMockEnv = "SCRIPTHOST_STRIPE_MOCK"

// startStripeMock starts stripe-mock (Stripe's API mock server, which validates every
// request against Stripe's OpenAPI spec) on a free loopback port and returns its base
// URL; it is stopped when the test ends. Without the program the test is skipped,
// saying how to get it, except in CI (CI set), where it must be there.
func startStripeMock(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(stripeMockEnv)
	if bin == "" {
		bin, _ = filepath.Abs("../../.tools/stripe-mock")
	}
	if _, err := os.Stat(bin); err != nil {
		if p, lerr := exec.LookPath("stripe-mock"); lerr == nil {
			bin = p
		} else {
			msg := "stripe-mock not found (" + stripeMockEnv + ", .tools/ or PATH): `make test` installs it, or `GOBIN=$PWD/.tools go install github.com/stripe/stripe-mock@v0.203.0`"
			if os.Getenv("CI") != "" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	// Both listeners on free loopback ports: stripe-mock also serves HTTPS, by
	// default on a fixed port on every interface.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-addr", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`Listening for HTTP at address: (127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatalf("stripe-mock did not say where it listens within 60s: %s", stderr.String())
	}
	return ""
}

// stripeKey is a test-mode secret key in the shape stripe-mock checks.
const stripeKey = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"

// TestStripeExample runs scripts/stripe (the Stripe example of docs/tools.md) through the CLI
// against stripe-mock: each order is charged with a form body whose nested metadata
// stripe-mock validates against Stripe's spec, the mutation is applied with Stripe's
// charge object as its result, and the secret key appears nowhere the host writes.
// The same tool declared with a JSON body is refused by stripe-mock, and the refusal
// reads as Stripe's error.
func TestStripeExample(t *testing.T) {
	base := startStripeMock(t)
	t.Setenv("STRIPE_SECRET_KEY", stripeKey)
	const example = "../../scripts/stripe"
	setup := func(t *testing.T, edit func(string) string) *httpEnv {
		dir := t.TempDir()
		for _, f := range []string{"workflow.js", "orders.json"} {
			writeFile(t, filepath.Join(dir, f), readFileT(t, filepath.Join(example, f)))
		}
		tools := strings.ReplaceAll(readFileT(t, filepath.Join(example, "tools.yaml")), "https://api.stripe.com", base)
		writeFile(t, filepath.Join(dir, "tools.yaml"), edit(tools))
		return &httpEnv{t: t, dir: dir, db: filepath.Join(t.TempDir(), "ledger.db"), wf: filepath.Join(dir, "workflow.js"), tools: filepath.Join(dir, "tools.yaml")}
	}

	t.Run("form", func(t *testing.T) {
		e := setup(t, func(s string) string { return s })
		var written strings.Builder
		out := e.mustRun("--name", "stripe", "--verbose")
		written.WriteString(out)
		ms := e.mutations()
		if len(ms) != 2 {
			t.Fatalf("got %d mutations, want 2\n%s", len(ms), out)
		}
		for i, m := range ms {
			if m.Status != scripthost.MutationApplied {
				t.Fatalf("mutation %d: got %s (%s), want applied\n%s", i, m.Status, m.Error, out)
			}
			var charge struct {
				ID, Object string
				Amount     int
			}
			wantAmount := []int{2000, 4500}[i]
			if err := json.Unmarshal(m.Result, &charge); err != nil || charge.Object != "charge" || !strings.HasPrefix(charge.ID, "ch_") || charge.Amount != wantAmount {
				t.Errorf("mutation %d result: got %s, want a Stripe charge object of %d", i, m.Result, wantAmount)
			}
			var params struct {
				Metadata map[string]string
			}
			json.Unmarshal(m.Params, &params)
			if want := []string{"o-1001", "o-1002"}[i]; params.Metadata["order"] != want {
				t.Errorf("mutation %d params: got %s, want metadata.order %s", i, m.Params, want)
			}
		}
		if !strings.Contains(out, "order o-1001: applied as charge ch_") || !strings.Contains(out, "order o-1002: applied as charge ch_") {
			t.Errorf("output: got\n%s\nwant both orders applied as charges", out)
		}
		for _, args := range [][]string{{"runs", "--json"}, {"mutations", "--json"}, {"events", "--json"}} {
			_, o, eo := cli(t, "", append([]string{"--db", e.db}, args...)...)
			written.WriteString(o + eo)
		}
		if strings.Contains(written.String(), stripeKey) {
			t.Errorf("the secret key appears in what the host printed")
		}
		files, _ := filepath.Glob(e.db + "*")
		for _, f := range files {
			if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(stripeKey)) {
				t.Errorf("the secret key appears in the ledger file %s", filepath.Base(f))
			}
		}
	})

	t.Run("list with a query", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tools.yaml")
		writeFile(t, path, "- {namespace: Stripe, method: charges, read_only: true, url: '"+base+"/v1/charges', body: query,\n"+
			"   headers: {Authorization: 'Bearer ${STRIPE_SECRET_KEY}'}}\n")
		tools, err := httptool.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := tools[0].Execute(context.Background(), json.RawMessage(`{"limit":3,"created":{"gte":1700000000},"expand":["data.customer"]}`))
		var list struct{ Object string }
		if err != nil || json.Unmarshal(out, &list) != nil || list.Object != "list" {
			t.Errorf("got %s, %v, want a Stripe list", out, err)
		}
		_, err = tools[0].Execute(context.Background(), json.RawMessage(`{"created":{"gte":"soon"}}`))
		if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), "invalid_request_error") {
			t.Errorf("a mistyped nested parameter: got %v, want Stripe's invalid_request_error", err)
		}
	})

	t.Run("json is refused", func(t *testing.T) {
		e := setup(t, func(s string) string { return strings.Replace(s, "body: form", "body: json", 1) })
		e.mustRun("--name", "stripe")
		ms := e.mutations()
		if len(ms) == 0 || ms[0].Status != scripthost.MutationFailed || ms[0].ErrorClass != scripthost.ClassLogic ||
			!strings.Contains(ms[0].Error, "HTTP 400: invalid_request_error:") || !strings.Contains(ms[0].Error, "application/x-www-form-urlencoded") {
			t.Errorf("got %+v, want a failed mutation with Stripe's error saying it wants a form", ms)
		}
	})
}

// TestToolsDocStripeExample keeps the Stripe example of docs/tools.md the tested one:
// its tool declaration is scripts/stripe/tools.yaml byte for byte, and the call it shows
// sends the form body it says it sends.
func TestToolsDocStripeExample(t *testing.T) {
	readme := readFileT(t, "../../docs/tools.md")
	tools := readFileT(t, "../../scripts/stripe/tools.yaml")
	if !strings.Contains(readme, "```yaml\n"+tools+"```\n") {
		t.Errorf("docs/tools.md does not show scripts/stripe/tools.yaml as it is")
	}
	call := regexp.MustCompile("(?s)await Stripe\\.charge\\((\\{.*?\\})\\);\n// sends (\\S+)\n").FindStringSubmatch(readme)
	if call == nil {
		t.Fatal("docs/tools.md has no Stripe.charge call followed by the body it sends")
	}
	// The call is JavaScript; its object literal is made JSON by quoting the keys.
	input := regexp.MustCompile(`(\w+):`).ReplaceAllString(strings.ReplaceAll(call[1], "'", `"`), `"$1":`)
	svc := fakesvc.New()
	defer svc.Close()
	t.Setenv("STRIPE_SECRET_KEY", stripeKey)
	path := filepath.Join(t.TempDir(), "tools.yaml")
	writeFile(t, path, strings.ReplaceAll(tools, "https://api.stripe.com", svc.URL()))
	loaded, err := httptool.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loaded[0].Execute(hostfuncs.WithIdempotencyKey(context.Background(), "k"), json.RawMessage(input)); err != nil {
		t.Fatalf("%s: %v", input, err)
	}
	got := strings.NewReplacer("%5B", "[", "%5D", "]").Replace(string(svc.Requests()[0].Body))
	if got != call[2] {
		t.Errorf("the call in docs/tools.md sends\n%s\nnot what it says:\n%s", got, call[2])
	}
}
