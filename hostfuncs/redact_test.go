package hostfuncs

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestRedact(t *testing.T) {
	r := NewRedactor("s3cr3t-value", "tiny"[:3], "p@ss word/1")
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"registered secret", "calling with s3cr3t-value now", "calling with [REDACTED] now"},
		{"registered secret twice", "s3cr3t-values3cr3t-value", "[REDACTED][REDACTED]"},
		{"query-escaped secret", "https://x/?q=p%40ss+word%2F1", "https://x/?q=[REDACTED]"},
		{"path-escaped secret", "https://x/p@ss%20word%2F1/y", "https://x/[REDACTED]/y"},
		{"short value as a word", "tin tin", "[REDACTED] [REDACTED]"},
		{"short value inside a word kept", "tinted latin tins", "tinted latin tins"},
		{"bearer", "Bearer abc.def-ghi_jkl", "Bearer [REDACTED]"},
		{"bearer lower case", "sent bearer XYZ123== ok", "sent bearer [REDACTED] ok"},
		{"authorization header", "Authorization: Basic dXNlcjpwYXNz", "Authorization: [REDACTED]"},
		{"aws key", "key AKIAIOSFODNN7EXAMPLE used", "key [REDACTED] used"},
		{"aws session key", "ASIAIOSFODNN7EXAMPLE", "[REDACTED]"},
		{"github token", "ghp_0123456789abcdefghijABCDEFGHIJ", "[REDACTED]"},
		{"github server token", "token ghs_0123456789abcdefghijXYZ", "token [REDACTED]"},
		{"github pat", "github_pat_11ABCDEFG0123456789_abcdefghij", "[REDACTED]"},
		{"slack", "xoxb-1234567890-abcdefghij", "[REDACTED]"},
		{"stripe live", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED]"},
		{"stripe test", "use sk_test_4eC39HqLyjWDarjtT1zdp7dc please", "use [REDACTED] please"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.sig_nature-x", "[REDACTED]"},
		{"pem", "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\nb", "a\n[REDACTED]\nb"},
		{"pem openssh", "-----BEGIN OPENSSH PRIVATE KEY-----\\nabc\\n-----END OPENSSH PRIVATE KEY-----", "[REDACTED]"},
		{"password in url query", "https://h/p?user=bob&password=hunter2&x=1", "https://h/p?user=bob&password=[REDACTED]&x=1"},
		{"userinfo in url", "postgres://bob:hunter2@db:5432/x", "postgres://bob:[REDACTED]@db:5432/x"},
		{"api_key param", "GET /v1?api_key=abcdef123", "GET /v1?api_key=[REDACTED]"},
		{"token param", "x?access_token=zzz&y=2", "x?access_token=[REDACTED]&y=2"},
		{"key param", "maps?key=AIzaSyA&q=1", "maps?key=[REDACTED]&q=1"},
		{"idempotency key kept", "charges?idempotency_key=sh_abc", "charges?idempotency_key=sh_abc"},
		{"monkey kept", "monkey=banana", "monkey=banana"},
		{"json text", `body {"user":"bob","password":"hunter2","n":1}`, `body {"user":"bob","password":"[REDACTED]","n":1}`},
		{"json text escaped quote", `{"client_secret":"a\"b"}`, `{"client_secret":"[REDACTED]"}`},
		{"password colon", "password: hunter2, user: bob", "password: [REDACTED], user: bob"},
		{"plain text kept", "charge 42 created for bob", "charge 42 created for bob"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q): got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactJSON(t *testing.T) {
	r := NewRedactor("registered-secret")
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"secret keys", `{"password":"a","Api-Key":"b","user":"bob"}`, `{"Api-Key":"[REDACTED]","password":"[REDACTED]","user":"bob"}`},
		{"case and separators", `{"CLIENT_SECRET":"x","accessKey":"y","private_key":"z","Authorization":"Bearer q","X-Auth-Token":"t","passwd":"p","apikey":"k"}`,
			`{"Authorization":"[REDACTED]","CLIENT_SECRET":"[REDACTED]","X-Auth-Token":"[REDACTED]","accessKey":"[REDACTED]","apikey":"[REDACTED]","passwd":"[REDACTED]","private_key":"[REDACTED]"}`},
		{"nested", `{"a":{"b":[{"token":"x"},{"c":"registered-secret!"}]}}`, `{"a":{"b":[{"token":"[REDACTED]"},{"c":"[REDACTED]!"}]}}`},
		{"object under secret key", `{"credentials":{"user":"u","pass":"p"}}`, `{"credentials":"[REDACTED]"}`},
		{"numbers kept under secret-looking key", `{"max_tokens":100,"token":null}`, `{"max_tokens":100,"token":null}`},
		{"number literal kept", `{"amount":1.50e2,"big":12345678901234567890}`, `{"amount":1.50e2,"big":12345678901234567890}`},
		{"pattern in value", `{"note":"use sk_live_4eC39HqLyjWDarjtT1zdp7dc"}`, `{"note":"use [REDACTED]"}`},
		{"html not escaped", `{"q":"<a&b>"}`, `{"q":"<a&b>"}`},
		{"top-level string", `"registered-secret"`, `"[REDACTED]"`},
		{"invalid json redacted as text", `{"password":"x"`, `{"password":"[REDACTED]"`},
		{"invalid json with secret", `registered-secret oops`, `[REDACTED] oops`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(r.RedactJSON(json.RawMessage(tt.in))); got != tt.want {
				t.Errorf("RedactJSON(%s): got %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactJSONSecretFields(t *testing.T) {
	r := NewRedactor()
	got := string(r.redactJSON(json.RawMessage(`{"card":"4242","amount":5,"sub":{"card":"1"}}`), []string{"card"}))
	want := `{"amount":5,"card":"[REDACTED]","sub":{"card":"[REDACTED]"}}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestRedactorNil(t *testing.T) {
	var r *Redactor
	r.AddSecret("whatever-secret")
	if got, want := r.Redact("Bearer abcdef and whatever-secret"), "Bearer [REDACTED] and whatever-secret"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRedactorAddSecretLongestFirst(t *testing.T) {
	r := NewRedactor("abcd")
	r.AddSecret("abcdefgh")
	if got, want := r.Redact("xabcdefghx abcd"), "x[REDACTED]x [REDACTED]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestIsSecretKey(t *testing.T) {
	tests := map[string]bool{
		"password": true, "PASSWORD": true, "db_password": true, "x-api-key": true,
		"Authorization": true, "client_secret": true, "AWS_ACCESS_KEY_ID": true,
		"Cookie": true, "user": false, "amount": false, "id": false, "idempotency_key": false,
	}
	for k, want := range tests {
		if got := IsSecretKey(k); got != want {
			t.Errorf("IsSecretKey(%q): got %v, want %v", k, got, want)
		}
	}
}

func TestRedactorConcurrent(t *testing.T) {
	r := NewRedactor()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 50 {
				r.AddSecret(fmt.Sprintf("secret-%d-%d", i, j))
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				_ = r.Redact("secret-1-1 and secret-2-2")
				_ = r.RedactJSON(json.RawMessage(`{"a":"secret-3-3"}`))
			}
		}()
	}
	wg.Wait()
	if got := r.Redact("secret-7-49"); strings.Contains(got, "secret-7-49") {
		t.Errorf("got %q, want the secret redacted", got)
	}
}

func TestRedactSecrets(t *testing.T) {
	r := NewRedactor("tok-1234", "5678")
	tests := []struct{ name, in, want string }{
		{"string value", `{"echo":"Bearer tok-1234","password":"kept"}`, `{"echo":"Bearer [REDACTED]","password":"kept"}`},
		{"numeric secret in a number is kept valid", `{"n":5678,"s":"x5678"}`, `{"n":5678,"s":"x[REDACTED]"}`},
		{"key", `{"tok-1234":1}`, `{"[REDACTED]":1}`},
		{"untouched when clean", `{"b":1, "a":2}`, `{"b":1, "a":2}`},
		{"patterns left alone", `{"t":"sk_live_4eC39HqLyjWDarjtT1zdp7dc"}`, `{"t":"sk_live_4eC39HqLyjWDarjtT1zdp7dc"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(r.RedactSecrets(json.RawMessage(tt.in))); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	var nilR *Redactor
	if got := string(nilR.RedactSecrets(json.RawMessage(`{"a":1}`))); got != `{"a":1}` {
		t.Errorf("nil redactor: got %s", got)
	}
}

// TestShortSecrets: a secret shorter than the substring bound is still kept out of
// what is stored and shown where it stands alone (a whole string value, a word of
// text), without blanking it out of other words.
func TestShortSecrets(t *testing.T) {
	r := NewRedactor("7", "pi", "x.y")
	text := []struct{ in, want string }{
		{"pin 7 accepted", "pin [REDACTED] accepted"},
		{"7", "[REDACTED]"},
		{"code=pi;", "code=[REDACTED];"},
		{"pi pi", "[REDACTED] [REDACTED]"},
		{"pipe 77 17 x.yz", "pipe 77 17 x.yz"},
		{"host x.y down", "host [REDACTED] down"},
		{"", ""},
	}
	for _, tt := range text {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
	values := []struct{ in, want string }{
		{`{"pin":"7","id":"ch_7","n":7}`, `{"id":"ch_7","n":7,"pin":"[REDACTED]"}`},
		{`["pi","pipe"]`, `["[REDACTED]","pipe"]`},
		{`{"note":"no secret here"}`, `{"note":"no secret here"}`},
	}
	for _, tt := range values {
		if got := string(r.RedactSecrets(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("RedactSecrets(%s): got %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCheckSecret(t *testing.T) {
	tests := []struct {
		v    string
		fail bool
	}{
		{"", true}, {"a", true}, {"abc", true}, {"1234567", true}, {"  abcdefg  ", true},
		{"12345678", false}, {"sk_live_0123456789", false},
	}
	for _, tt := range tests {
		err := CheckSecret(tt.v)
		if got := err != nil; got != tt.fail {
			t.Errorf("CheckSecret(%q): got error %v, want error %v", tt.v, err, tt.fail)
		}
		if v := strings.TrimSpace(tt.v); err != nil && len(v) >= 3 && strings.Contains(err.Error(), v) {
			t.Errorf("CheckSecret(%q): error %q holds the value", tt.v, err)
		}
	}
}
