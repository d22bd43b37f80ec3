package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/fakesvc"
)

// otlpReceiver is an OTLP/HTTP trace endpoint that keeps every span it is sent.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// metric returns the sum of the samples of name whose labels contain every want
// (label="value").
func metric(text, name string, want ...string) float64 {
	sum := 0.0
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	for _, line := range strings.Split(text, "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(m[1], w)
		}
		if v, err := strconv.ParseFloat(m[2], 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// TestServeMetricsAndTraces runs the charges workflow under serve with an OTLP
// receiver configured: the metrics scraped before and after the runs show the counters
// moving, and the receiver gets each consumer run's spans: the run, its phases as its
// children, and the charge tool call under the mutate phase with its idempotency key.
func TestServeMetricsAndTraces(t *testing.T) {
	t.Setenv(tokenEnv, e2eToken)
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	svc := fakesvc.New()
	defer svc.Close()
	e := newHTTPEnv(t, svc.URL(), "tools.json", 2, "5s")
	svc.SetDefault(fakesvc.Hold) // the charges wait until the first scrape is done
	// and take longer than --slow-call even when they reach the service after it.
	svc.SetLatency(2 * time.Millisecond)

	s := startServe(t, e.db, e.wf, "--tools", e.tools, "--workspace", e.dir, "--token", testServeToken, "--slow-call", "1ms")
	scrape := func() string {
		code, b := s.call("GET", "/metrics", testServeToken, nil)
		if code != http.StatusOK {
			t.Fatalf("GET /metrics: %d %s", code, b)
		}
		return string(b)
	}
	before := scrape()
	svc.Release()
	waitFor(t, func() bool {
		var runs []scripthost.Run
		s.get("/api/v1/runs?handler=charge&status=committed", &runs)
		return len(runs) == 2
	})
	after := scrape()
	charge := `handler="charge"`
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"scripthost_runs_committed_total", []string{charge}, 2},
		{"scripthost_mutations_total", []string{`outcome="applied"`, `tool="Charges.create"`}, 2},
		{"scripthost_tool_call_duration_seconds_count", []string{`tool="Charges.create"`, `outcome="ok"`}, 2},
		{"scripthost_phase_duration_seconds_count", []string{charge, `phase="mutate"`}, 2},
	} {
		if got, was := metric(after, c.name, c.labels...), metric(before, c.name, c.labels...); got-was != c.want {
			t.Errorf("%s%v: went from %v to %v, want +%v", c.name, c.labels, was, got, c.want)
		}
	}
	if metric(after, "scripthost_runs_started_total", charge) < 2 || metric(after, "scripthost_ledger_commit_batch_size_count") <= metric(before, "scripthost_ledger_commit_batch_size_count") ||
		metric(after, "scripthost_ledger_commit_duration_seconds_count") == 0 {
		t.Errorf("runs started and ledger commits did not move:\n%s", after)
	}
	if !strings.Contains(after, "scripthost_mutations_indeterminate 0") {
		t.Error("no indeterminate gauge at 0")
	}
	if !strings.Contains(s.stderr.String(), "slow tool call") {
		t.Error("no slow tool call line with --slow-call 1ms")
	}
	if code := s.close(); code != 0 { // flushes the spans
		t.Fatalf("serve exited %d", code)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	for _, sp := range recv.spans {
		byID[hex.EncodeToString(sp.SpanId)] = sp
	}
	parent := func(sp *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(sp.ParentSpanId)] }
	consumerRuns := 0
	for _, sp := range recv.spans {
		if sp.Name != "run" || attr(sp, "scripthost.handler") != "charge" {
			continue
		}
		consumerRuns++
		phases := map[string]*tracepb.Span{}
		for _, c := range recv.spans {
			if p := parent(c); p == sp && strings.HasPrefix(c.Name, "phase ") {
				phases[c.Name] = c
				if string(c.TraceId) != string(sp.TraceId) {
					t.Errorf("%s is in another trace than its run", c.Name)
				}
			}
		}
		for _, want := range []string{"phase prepare", "phase mutate", "phase next"} {
			if phases[want] == nil {
				t.Errorf("run %s: no child span %q (children %v)", attr(sp, "scripthost.run_id"), want, phases)
			}
		}
		tools := 0
		for _, c := range recv.spans {
			if c.Name == "tool Charges.create" && parent(c) != nil && parent(c) == phases["phase mutate"] {
				tools++
				if attr(c, "scripthost.idempotency_key") == "" {
					t.Error("the tool call span has no idempotency key")
				}
			}
		}
		if tools != 1 {
			t.Errorf("run %s: %d charge tool spans under its mutate phase, want 1", attr(sp, "scripthost.run_id"), tools)
		}
	}
	if consumerRuns != 2 {
		t.Errorf("got %d consumer run spans, want 2 (of %d spans)", consumerRuns, len(recv.spans))
	}
}
