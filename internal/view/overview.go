package view

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/scripthost/scripthost/ledger"
)

// Overview is the state of the ledger at a glance: runs by status, and the rate and
// phase times of the runs of the last Window.
type Overview struct {
	At time.Time `json:"at"`
	// WindowSeconds is the length of the window the rates and phase times cover,
	// ending At.
	WindowSeconds int64 `json:"window_seconds"`
	// Runs counts every run by the status operators see (superseded included).
	Runs map[string]int `json:"runs"`
	// RunsPerSecond are the runs created in the window, per second; FailuresPerSecond
	// the runs that ended failed in it.
	RunsPerSecond     float64 `json:"runs_per_second"`
	FailuresPerSecond float64 `json:"failures_per_second"`
	// Phases are the times of the phases that ended in the window, by phase name.
	Phases []PhaseTime `json:"phases"`
}

// PhaseTime sums up how long one phase took: the nearest-rank 50th and 99th
// percentiles over Count phases, from phase_started to phase_completed or
// phase_failed in the lifecycle log.
type PhaseTime struct {
	Phase string `json:"phase"`
	Count int    `json:"count"`
	P50MS int64  `json:"p50_ms"`
	P99MS int64  `json:"p99_ms"`
}

// OverviewOf computes the overview at clock() over the window before it (0: an hour).
func OverviewOf(ctx context.Context, store ledger.Store, clock func() time.Time, window time.Duration) (Overview, error) {
	if clock == nil {
		clock = time.Now
	}
	if window <= 0 {
		window = time.Hour
	}
	now := clock()
	from := now.Add(-window)
	o := Overview{At: now, WindowSeconds: int64(window / time.Second), Runs: map[string]int{}, Phases: []PhaseTime{}}
	runs, err := store.Runs(ctx, ledger.RunFilter{})
	if err != nil {
		return o, err
	}
	inWindow := func(t time.Time) bool { return !t.Before(from) && !t.After(now) }
	created, failed := 0, 0
	durations := map[string][]time.Duration{}
	for _, r := range runs {
		o.Runs[r.Shown()]++
		if r.Status.Failed() && inWindow(r.UpdatedAt) {
			failed++
		}
		if !inWindow(r.CreatedAt) {
			continue
		}
		created++
		evs, err := store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: r.ID})
		if err != nil {
			return o, err
		}
		if err := phaseDurations(r.ID, evs, inWindow, durations); err != nil {
			return o, err
		}
	}
	secs := window.Seconds()
	o.RunsPerSecond, o.FailuresPerSecond = float64(created)/secs, float64(failed)/secs
	for _, phase := range slices.Sorted(maps.Keys(durations)) {
		ds := durations[phase]
		slices.Sort(ds)
		o.Phases = append(o.Phases, PhaseTime{Phase: phase, Count: len(ds),
			P50MS: rank(ds, 0.50).Milliseconds(), P99MS: rank(ds, 0.99).Milliseconds()})
	}
	return o, nil
}

// phaseDurations adds to out, by phase, the time from each phase_started to the
// phase_completed or phase_failed of the same phase that ends it in the window.
func phaseDurations(runID string, evs []ledger.LifecycleEvent, inWindow func(time.Time) bool, out map[string][]time.Duration) error {
	started := map[string]time.Time{}
	for _, ev := range evs {
		if ev.Type != ledger.EventPhaseStarted && ev.Type != ledger.EventPhaseCompleted && ev.Type != ledger.EventPhaseFailed {
			continue
		}
		var d struct {
			Phase string `json:"phase"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return fmt.Errorf("run %s: lifecycle entry %d: %w", runID, ev.Seq, err)
		}
		if ev.Type == ledger.EventPhaseStarted {
			started[d.Phase] = ev.At
			continue
		}
		at, ok := started[d.Phase]
		if !ok {
			continue
		}
		delete(started, d.Phase)
		if inWindow(ev.At) {
			out[d.Phase] = append(out[d.Phase], ev.At.Sub(at))
		}
	}
	return nil
}

// rank is the nearest-rank q-quantile of the sorted ds.
func rank(ds []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	i = max(0, min(i, len(ds)-1))
	return ds[i]
}
