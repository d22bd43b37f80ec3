package agent

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/scripthost/scripthost/internal/fakemodel"
	"github.com/scripthost/scripthost/ledger"
)

// endless is a body that never ends: the opening of an answer, then one content
// string forever.
type endless struct{ head string }

func (r *endless) Read(p []byte) (int, error) {
	if r.head != "" {
		n := copy(p, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestModelAnswerCaps: an answer larger than the caps (a 30 MB tool argument, a 30 MB
// content string, a body that never ends, an argument over a lower argument cap) fails
// the step with a model error that says so, is never stored, and leaves the ledger
// small.
func TestModelAnswerCaps(t *testing.T) {
	big := strings.Repeat("x", 30<<20)
	tests := []struct {
		name   string
		answer fakemodel.Answer
		mod    func(*Options)
		want   string
	}{
		{"30 MB argument", tools(call("write_file", map[string]string{"path": "big.txt", "content": big})), nil,
			"larger than the 1048576-byte cap (max_response_bytes)"},
		{"30 MB content", fakemodel.Answer{Text: big}, nil,
			"larger than the 1048576-byte cap (max_response_bytes)"},
		{"endless body", fakemodel.Answer{Body: &endless{head: `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`}}, nil,
			"larger than the 1048576-byte cap (max_response_bytes)"},
		{"argument over its cap", tools(call("write_file", map[string]string{"path": "a.txt", "content": strings.Repeat("y", 5000)})),
			func(o *Options) { o.MaxArgumentBytes = 4096 }, "more than the 4096-byte cap (max_argument_bytes)"},
		{"answer over a lower response cap", fakemodel.Answer{Text: strings.Repeat("z", 5000)},
			func(o *Options) { o.MaxResponseBytes = 4096 }, "more than the 4096-byte cap (max_response_bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, fakemodel.New(tc.answer))
			x := e.executor(tc.mod)
			res := e.run(x, "goal: g\nsteps: [{id: s, title: S}]\n")
			wantStatus(t, res, StatusFailed, CodeModel)
			if !strings.Contains(res.Steps[0].Error, tc.want) {
				t.Fatalf("step error: got %q, want it to contain %q", res.Steps[0].Error, tc.want)
			}
			if e.srv.Count() != 1 {
				t.Fatalf("model requests: got %d, want 1 (an oversized answer is not retried)", e.srv.Count())
			}
			as := e.store.(ledger.AgentStore)
			if turns, _ := as.AgentTurns(context.Background(), res.Session); len(turns) != 0 {
				t.Fatalf("turns: got %d, want 0 (the answer is not stored)", len(turns))
			}
			sess, err := as.AgentSession(context.Background(), res.Session)
			if err != nil {
				t.Fatal(err)
			}
			if len(sess.State) > 4096 || !strings.Contains(string(sess.State), "cap") {
				t.Fatalf("stored state: got %d bytes, want the refusal in under 4 KiB: %.300s", len(sess.State), sess.State)
			}
			e.store.Close()
			var size int64
			for _, suffix := range []string{"", "-wal"} {
				if fi, err := os.Stat(e.dbPath + suffix); err == nil {
					size += fi.Size()
				}
			}
			if size > 4<<20 {
				t.Fatalf("ledger: got %d bytes, want under 4 MiB", size)
			}
		})
	}
}

// TestModelAnswerAtTheCap: an answer just under the caps is taken.
func TestModelAnswerAtTheCap(t *testing.T) {
	e := newEnv(t, fakemodel.New(tools(call("write_file", map[string]string{"path": "a.txt", "content": strings.Repeat("y", 3000)})), done("wrote")))
	x := e.executor(func(o *Options) { o.MaxArgumentBytes = 4096 })
	res := e.run(x, "goal: g\nsteps: [{id: s, title: S}]\n")
	wantStatus(t, res, StatusCompleted, "")
	if got := len(e.file("a.txt")); got != 3000 {
		t.Fatalf("a.txt: got %d bytes, want 3000", got)
	}
}

// TestCappedBody reads a body through the cap: exactly the cap is allowed, one byte
// more is refused.
func TestCappedBody(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantErr bool
	}{{99, false}, {100, false}, {101, true}, {10 << 20, true}} {
		b := &cappedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("a", tc.size))), left: 100, limit: 100}
		got, err := io.ReadAll(b)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%d bytes: got error %v, want error %v", tc.size, err, tc.wantErr)
		}
		if len(got) > 101 {
			t.Fatalf("%d bytes: read %d, want at most the cap and one", tc.size, len(got))
		}
	}
}
