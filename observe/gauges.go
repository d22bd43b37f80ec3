package observe

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// gaugeTTL is how long the ledger's gauges are reused: scrapes closer together (two
// Prometheus servers, a person with curl) read the ledger once.
const gaugeTTL = 5 * time.Second

// backlogCap bounds the pending events read per scrape; a backlog past it shows as
// the cap.
const backlogCap = 100000

// ledgerGauges reads the ledger's state when scraped: unfinished runs by status,
// handlers blocked until a person acts, pending events per topic, leases held per
// host, and whether the ledger answered at all. State lives in the ledger, shared by
// every host of a PostgreSQL ledger, so each host reports the whole ledger, not a
// share of it (aggregate with max, not sum).
type ledgerGauges struct {
	store   func() ledger.Store
	blocked func(context.Context) ([]scripthost.Run, error)
	now     func() time.Time

	runs, handlersBlocked, backlog, leases, up *prometheus.Desc

	mu      sync.Mutex
	read    time.Time
	metrics []prometheus.Metric
}

func newLedgerGauges(store func() ledger.Store, now func() time.Time) *ledgerGauges {
	return &ledgerGauges{store: store, now: now,
		runs: prometheus.NewDesc("scripthost_runs", "Runs not finished (active, paused:*), by status; failed runs are final: see scripthost_handlers_blocked.",
			[]string{"workflow", "handler", "status"}, nil),
		handlersBlocked: prometheus.NewDesc("scripthost_handlers_blocked",
			"Handlers whose newest run failed or paused and that start no new run until a person acts.",
			[]string{"workflow", "handler"}, nil),
		backlog: prometheus.NewDesc("scripthost_events_pending", "Events published and not yet reserved by a run, per topic.",
			[]string{"workflow", "topic"}, nil),
		leases: prometheus.NewDesc("scripthost_leases_held", "Workflow leases held and not expired, per host (PostgreSQL ledger).",
			[]string{"owner"}, nil),
		up: prometheus.NewDesc("scripthost_ledger_up", "1 when the ledger answered the reads of the last scrape, else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (g *ledgerGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.runs, g.handlersBlocked, g.backlog, g.leases, g.up} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the cached reading when it is recent.
func (g *ledgerGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	store := g.store()
	if store == nil {
		return
	}
	if now := g.now(); g.metrics == nil || now.Sub(g.read) >= gaugeTTL {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ms, err := g.collect(ctx, store)
		cancel()
		if err != nil {
			ms = []prometheus.Metric{prometheus.MustNewConstMetric(g.up, prometheus.GaugeValue, 0)}
		}
		g.metrics, g.read = ms, now
	}
	for _, m := range g.metrics {
		ch <- m
	}
}

func (g *ledgerGauges) collect(ctx context.Context, store ledger.Store) ([]prometheus.Metric, error) {
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	runs, err := store.Runs(ctx, ledger.RunFilter{Unfinished: true})
	if err != nil {
		return nil, err
	}
	byStatus := map[[3]string]int{}
	for _, r := range runs {
		byStatus[[3]string{r.Workflow, r.Handler, string(r.Status)}]++
	}
	for k, n := range byStatus {
		gauge(g.runs, float64(n), k[0], k[1], k[2])
	}
	if g.blocked != nil {
		blocked, err := g.blocked(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range blocked {
			gauge(g.handlersBlocked, 1, r.Workflow, r.Handler)
		}
	}
	evs, err := store.Events(ctx, ledger.EventFilter{Status: scripthost.EventPending, Limit: backlogCap})
	if err != nil {
		return nil, err
	}
	backlog := map[[2]string]int{}
	for _, e := range evs {
		backlog[[2]string{e.Workflow, e.Topic}]++
	}
	for k, n := range backlog {
		gauge(g.backlog, float64(n), k[0], k[1])
	}
	if l, ok := store.(ledger.Leaser); ok {
		ls, err := l.Leases(ctx)
		if err != nil {
			return nil, err
		}
		held := map[string]int{}
		for _, x := range ls {
			if x.Owner != "" && x.ExpiresAt.After(g.now()) {
				held[x.Owner]++
			}
		}
		for owner, n := range held {
			gauge(g.leases, float64(n), owner)
		}
	}
	gauge(g.up, 1)
	return out, nil
}
