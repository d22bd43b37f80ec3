package observe

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
)

// Options configure an Observer. Zero fields take defaults.
type Options struct {
	// Tracer makes the spans (default: none are made).
	Tracer trace.TracerProvider
	// Logger gets the slow tool call lines and, once Follow is called, a line for every
	// failed run, mutation turned indeterminate and reconcile given up (default:
	// discarded).
	Logger *slog.Logger
	// SlowCall is how long a tool call may take before it is logged (0: 5s; negative:
	// never).
	SlowCall time.Duration
	// Clock is the time the ledger gauges' cache is judged by (default: time.Now).
	Clock func() time.Time
}

// Observer collects a host's metrics and spans. It implements runtime.Observer.
type Observer struct {
	reg    *prometheus.Registry
	m      *metrics
	tracer trace.Tracer
	logger *slog.Logger
	slow   time.Duration
	follow *follower
	gauges *ledgerGauges
	// following is the goroutine of Follow.
	following sync.WaitGroup
}

// New returns an Observer. Its run counters and the indeterminate gauge read the
// ledger once Follow is called.
func New(opts Options) *Observer {
	if opts.Tracer == nil {
		opts.Tracer = noop.NewTracerProvider()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SlowCall == 0 {
		opts.SlowCall = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	reg := prometheus.NewRegistry()
	f := &follower{logger: opts.Logger, runs: map[string]scripthost.Run{}}
	f.m = newMetrics(reg, f.indeterminate)
	g := newLedgerGauges(f.followed, opts.Clock)
	reg.MustRegister(g)
	return &Observer{reg: reg, m: f.m, tracer: opts.Tracer.Tracer("github.com/scripthost/scripthost"),
		logger: opts.Logger, slow: opts.SlowCall, follow: f, gauges: g}
}

// Handler serves the metrics in the Prometheus text format; every scrape first reads
// the lifecycle log up to its end, so that run counters are current.
func (o *Observer) Handler() http.Handler {
	h := promhttp.HandlerFor(o.reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := o.follow.poll(r.Context()); err != nil {
			o.logger.Warn("metrics: reading the lifecycle log", "err", err)
		}
		h.ServeHTTP(w, r)
	})
}

// Follow counts the run outcomes store's lifecycle log records from now on, reading
// it every poll interval until ctx is done.
func (o *Observer) Follow(ctx context.Context, store ledger.Store, poll time.Duration) error {
	if err := o.follow.start(ctx, store); err != nil {
		return err
	}
	o.following.Go(func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := o.follow.poll(ctx); err != nil && ctx.Err() == nil {
					o.logger.Warn("metrics: reading the lifecycle log", "err", err)
				}
			}
		}
	})
	return nil
}

// Flush reads the lifecycle log up to its end now, counting and logging what it holds
// since the last read; a command calls it before it exits, so that the last runs' lines
// are written.
func (o *Observer) Flush(ctx context.Context) error {
	return o.follow.poll(ctx)
}

// WatchBlocked gives the scripthost_handlers_blocked gauge its source: the newest runs
// of the handlers that wait for a person (host.Host.Outstanding's Blocked). Call it
// before serving the metrics.
func (o *Observer) WatchBlocked(blocked func(context.Context) ([]scripthost.Run, error)) {
	o.gauges.mu.Lock()
	defer o.gauges.mu.Unlock()
	o.gauges.blocked = blocked
}

// Wait waits for the reading Follow started to stop, once its context is done.
func (o *Observer) Wait() {
	o.following.Wait()
}

// OnCommit records one ledger commit (see sqlite.Options.OnCommit).
func (o *Observer) OnCommit(writes int, took time.Duration) {
	o.m.commitSeconds.Observe(took.Seconds())
	o.m.commitBatch.Observe(float64(writes))
}

// OnRetry records a ledger write transaction run again, and why (see
// postgres.Options.OnRetry).
func (o *Observer) OnRetry(reason string) {
	o.m.retries.WithLabelValues(reason).Inc()
}

// OnSync records one fsync of the ledger's WAL that durable writes waited for, and
// how many commits it covered (see sqlite.Options.OnSync).
func (o *Observer) OnSync(commits int, took time.Duration) {
	o.m.syncSeconds.Observe(took.Seconds())
	o.m.syncCommits.Observe(float64(commits))
}

// Run starts the span of a run being driven. Every drive of a run (the first, and each
// resumption after a wait, a resolution or a restart, on any host) links to the run's
// anchor (RunAnchor), and a drive that starts a trace of its own starts it as the
// anchor's child: all of a run's drives share the trace its id names.
func (o *Observer) Run(ctx context.Context, runID string) (context.Context, func(error)) {
	done := o.follow.own.begin(runID)
	anchor := RunAnchor(runID)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, anchor)
	}
	ctx, span := o.tracer.Start(ctx, "run", trace.WithAttributes(attribute.String("scripthost.run_id", runID)),
		trace.WithLinks(trace.Link{SpanContext: anchor, Attributes: []attribute.KeyValue{
			attribute.String("scripthost.link", "run")}}))
	return ctx, func(err error) { end(span, err); done() }
}

// Reconciling is called when this host reconciles a mutation outside a drive of its
// run (runtime.Reconciler): the lines of what it writes are this host's to log. The
// function it returns ends the reconcile.
func (o *Observer) Reconciling(runID, mutationID string) func() {
	key := runID
	if key == "" {
		key = mutationID
	}
	return o.follow.own.begin(key)
}

// RunAnchor is the span context a run's drives link to: its trace id is the first 16
// bytes of the SHA-256 of "scripthost run " and the run id, its span id the next 8. It
// is derived, not stored, so that a host that resumes a run another host (or this one
// before a restart) began finds it without reading anything.
func RunAnchor(runID string) trace.SpanContext {
	sum := sha256.Sum256([]byte("scripthost run " + runID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// Phase starts the span of one phase invocation, as a child of its run's, and times it.
func (o *Observer) Phase(ctx context.Context, run scripthost.Run, phase scripthost.Phase) (context.Context, func(error)) {
	attrs := []attribute.KeyValue{attribute.String("scripthost.workflow", run.Workflow),
		attribute.String("scripthost.handler", run.Handler), attribute.String("scripthost.run_id", run.ID)}
	runSpan := trace.SpanFromContext(ctx)
	runSpan.SetAttributes(attrs...)
	ctx, span := o.tracer.Start(ctx, "phase "+string(phase),
		trace.WithAttributes(append(attrs, attribute.String("scripthost.phase", string(phase)))...))
	running := o.m.phasesRunning.WithLabelValues(run.Workflow, run.Handler, string(phase))
	running.Inc()
	start := time.Now()
	return ctx, func(err error) {
		running.Dec()
		o.m.phaseSeconds.WithLabelValues(run.Workflow, run.Handler, string(phase)).Observe(time.Since(start).Seconds())
		if err != nil {
			// The runtime records a phase's failure on the run and drives on without an
			// error: the run's span says it here.
			runSpan.SetStatus(codes.Error, "phase "+string(phase)+" failed: "+err.Error())
		}
		end(span, err)
	}
}

// WrapTools times every tool of reg and gives each call a span, a child of the phase
// that made it; a mutation's span carries its idempotency key. Tools registered later
// are not wrapped.
func (o *Observer) WrapTools(reg *hostfuncs.Registry) {
	for _, t := range reg.Tools() {
		exec, name := t.Execute, t.Namespace+"."+t.Method
		if exec == nil {
			continue
		}
		t.Execute = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			attrs := []attribute.KeyValue{attribute.String("scripthost.tool", name)}
			key := hostfuncs.IdempotencyKey(ctx)
			if key != "" {
				attrs = append(attrs, attribute.String("scripthost.idempotency_key", key))
			}
			ctx, span := o.tracer.Start(ctx, "tool "+name, trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindClient))
			start := time.Now()
			out, err := exec(ctx, in)
			took := time.Since(start)
			outcome := "ok"
			if err != nil {
				outcome = string(scripthost.ClassOf(err))
			}
			o.m.toolSeconds.WithLabelValues(name, outcome).Observe(took.Seconds())
			if o.slow > 0 && took >= o.slow {
				o.logger.Warn("slow tool call", "tool", name, "took", took, "threshold", o.slow,
					"idempotency_key", key, "outcome", outcome)
			}
			end(span, err)
			return out, err
		}
	}
}

func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
