// Package observe makes a host observable: Prometheus metrics, OpenTelemetry traces, a
// log line for slow tool calls and one for each failed run, indeterminate mutation and
// reconcile given up. It plugs into the runtime through runtime.Observer,
// into the tools by wrapping their Execute functions, and reads run outcomes from the
// ledger's lifecycle log, so the runtime itself has no metric or span calls.
package observe

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// metrics are the host's Prometheus collectors.
type metrics struct {
	runsStarted   *prometheus.CounterVec
	runsCommitted *prometheus.CounterVec
	runsFailed    *prometheus.CounterVec
	phaseSeconds  *prometheus.HistogramVec
	phasesRunning *prometheus.GaugeVec
	toolSeconds   *prometheus.HistogramVec
	mutations     *prometheus.CounterVec
	reconciles    *prometheus.CounterVec
	resolutions   *prometheus.CounterVec
	commitSeconds prometheus.Histogram
	syncSeconds   prometheus.Histogram
	syncCommits   prometheus.Histogram
	commitBatch   prometheus.Histogram
	retries       *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry, indeterminate func() float64) *metrics {
	wh := []string{"workflow", "handler"}
	m := &metrics{
		runsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scripthost_runs_started_total",
			Help: "Runs that started their first phase."}, wh),
		runsCommitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scripthost_runs_committed_total",
			Help: "Runs that committed."}, wh),
		runsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scripthost_runs_failed_total",
			Help: "Phase failures of runs, by error class."}, append(wh, "class")),
		phaseSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "scripthost_phase_duration_seconds",
			Help: "Time spent in one invocation of a phase or hook function.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)},
			append(wh, "phase")),
		phasesRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "scripthost_phases_running",
			Help: "Invocations of a phase or hook function running now, including those of runs not yet in the ledger " +
				"(a consumer run is first written at its mutation's in-flight record)."}, append(wh, "phase")),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "scripthost_tool_call_duration_seconds",
			Help: "Time spent in one tool call.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}, []string{"tool", "outcome"}),
		mutations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scripthost_mutations_total",
			Help: "Mutation outcomes (applied, failed, needs_reconcile, indeterminate, skipped), each change of status once, " +
				"including those a person's resolution made."}, []string{"tool", "outcome"}),
		resolutions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scripthost_resolutions_total",
			Help: "Mutations a person resolved, by the status they gave it."}, []string{"tool", "as"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scripthost_reconcile_attempts_total",
			Help: "Reconcile attempts of uncertain mutations, by tool and what they found."}, []string{"tool", "outcome"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "scripthost_ledger_commit_duration_seconds",
			Help: "Time from the start of a ledger write transaction to the end of its commit.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9)}),
		commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "scripthost_ledger_commit_batch_size",
			Help: "Writes carried by one ledger commit (group commit).", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "scripthost_ledger_transaction_retries_total",
			Help: "Ledger write transactions run again, by reason: serialization, deadlock, connection (lost before COMMIT) " +
				"or stale_row (a row the PostgreSQL ledger's row cache held had changed)."}, []string{"reason"}),
		syncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "scripthost_ledger_wal_fsync_duration_seconds",
			Help: "Time of one fsync of the SQLite ledger's WAL that durable writes waited for.", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9)}),
		syncCommits: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "scripthost_ledger_wal_fsync_commits",
			Help: "Commits one fsync of the SQLite ledger's WAL put on the disk.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}),
	}
	gauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "scripthost_mutations_indeterminate",
		Help: "Mutations whose outcome is unknown and that wait for a person."}, indeterminate)
	reg.MustRegister(m.runsStarted, m.runsCommitted, m.runsFailed, m.phaseSeconds, m.phasesRunning, m.toolSeconds, m.mutations,
		m.reconciles, m.resolutions, m.commitSeconds, m.commitBatch, m.retries, m.syncSeconds, m.syncCommits, gauge,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// follower reads the lifecycle log from where it was and counts run outcomes.
type follower struct {
	store  ledger.Store
	m      *metrics
	logger *slog.Logger
	// shared is set for a ledger several hosts share (a ledger.Leaser): the lines of
	// its lifecycle log are written by the host whose work wrote the event (own).
	shared bool
	own    authored

	mu    sync.Mutex
	after int64
	runs  map[string]scripthost.Run // run id → run, for its labels
}

// start follows store, skipping what its log already holds: counters count what
// this process sees. A ledger.LogTail tells where its log ends; another store's log
// is read to its end.
func (f *follower) start(ctx context.Context, store ledger.Store) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store = store
	_, f.shared = store.(ledger.Leaser)
	if lt, ok := store.(ledger.LogTail); ok {
		after, err := lt.LastLifecycleSeq(ctx)
		f.after = after
		return err
	}
	for {
		evs, err := f.store.LifecycleEvents(ctx, ledger.LifecycleFilter{AfterSeq: f.after, Limit: 1000})
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return nil
		}
		f.after = evs[len(evs)-1].Seq
	}
}

// poll counts every lifecycle event appended since the last poll.
func (f *follower) poll(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.store == nil {
		return nil
	}
	n := f.own.pollBegins()
	defer f.own.pollEnded(n)
	for {
		evs, err := f.store.LifecycleEvents(ctx, ledger.LifecycleFilter{AfterSeq: f.after, Limit: 1000})
		if err != nil || len(evs) == 0 {
			return err
		}
		for _, ev := range evs {
			f.count(ctx, ev)
			f.after = ev.Seq
		}
	}
}

func (f *follower) run(ctx context.Context, id string) scripthost.Run {
	r, ok := f.runs[id]
	if !ok {
		r, _ = f.store.Run(ctx, id)
		if len(f.runs) > 10000 {
			clear(f.runs)
		}
		f.runs[id] = r
	}
	return r
}

func (f *follower) count(ctx context.Context, ev ledger.LifecycleEvent) {
	var d eventData
	_ = json.Unmarshal(ev.Data, &d)
	r := f.run(ctx, ev.RunID)
	if !f.shared || f.own.mine(ev.RunID, ev.MutationID) {
		logEvent(ctx, f.logger, ev, r, d)
	}
	switch ev.Type {
	case ledger.EventPhaseStarted:
		if d.Phase == string(scripthost.PhasePrepare) || d.Phase == string(scripthost.PhaseProducer) {
			f.m.runsStarted.WithLabelValues(r.Workflow, r.Handler).Inc()
		}
	case ledger.EventCommitted:
		f.m.runsCommitted.WithLabelValues(r.Workflow, r.Handler).Inc()
	case ledger.EventPhaseFailed:
		f.m.runsFailed.WithLabelValues(r.Workflow, r.Handler, d.Class).Inc()
	case ledger.EventMutationOutcome:
		f.m.mutations.WithLabelValues(f.tool(ctx, ev), d.Status).Inc()
	case ledger.EventResolved:
		// The resolution's new status is counted by the mutation_outcome event written
		// with it; here only who decided.
		f.m.resolutions.WithLabelValues(f.tool(ctx, ev), d.As).Inc()
	case ledger.EventReconcileAttempt:
		f.m.reconciles.WithLabelValues(d.Tool, d.Outcome).Inc()
	}
}

// tool names the tool of the event's mutation.
func (f *follower) tool(ctx context.Context, ev ledger.LifecycleEvent) string {
	if ev.MutationID == "" {
		return ""
	}
	m, err := f.store.Mutation(ctx, ev.MutationID)
	if err != nil {
		return ""
	}
	return m.Tool()
}

// followed returns the store Follow reads (nil before).
func (f *follower) followed() ledger.Store {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.store
}

// indeterminate counts the mutations waiting for a person (-1 when the ledger cannot
// be read; 0 before Follow).
func (f *follower) indeterminate() float64 {
	f.mu.Lock()
	store := f.store
	f.mu.Unlock()
	if store == nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := store.Mutations(ctx, ledger.MutationFilter{Status: scripthost.MutationIndeterminate})
	if err != nil {
		return -1
	}
	return float64(len(ms))
}
