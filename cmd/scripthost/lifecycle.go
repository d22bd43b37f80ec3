package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
)

// eventStream writes the lifecycle events appended after it started as JSON lines.
type eventStream struct {
	store ledger.Store
	w     io.Writer
	after int64
	runs  map[string]scripthost.Run
	stop  chan struct{}
	done  sync.WaitGroup
}

// startEventStream follows the lifecycle log from its current end, checking every poll
// interval, until stop.
func startEventStream(ctx context.Context, store ledger.Store, w io.Writer, poll time.Duration) (*eventStream, error) {
	s := &eventStream{store: store, w: w, runs: map[string]scripthost.Run{}, stop: make(chan struct{})}
	for {
		evs, err := store.LifecycleEvents(ctx, ledger.LifecycleFilter{AfterSeq: s.after, Limit: 1000})
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		s.after = evs[len(evs)-1].Seq
	}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = s.drain(ctx)
			}
		}
	}()
	return s, nil
}

// drain writes every event appended since the last one written.
func (s *eventStream) drain(ctx context.Context) error {
	for {
		evs, err := s.store.LifecycleEvents(ctx, ledger.LifecycleFilter{AfterSeq: s.after, Limit: 1000})
		if err != nil || len(evs) == 0 {
			return err
		}
		enc := json.NewEncoder(s.w)
		enc.SetEscapeHTML(false)
		for _, ev := range evs {
			run, ok := s.runs[ev.RunID]
			if !ok {
				run, _ = s.store.Run(ctx, ev.RunID)
				s.runs[ev.RunID] = run
			}
			if err := enc.Encode(view.LineOf(ev, run)); err != nil {
				return err
			}
			s.after = ev.Seq
		}
	}
}

// close stops following and writes what is left.
func (s *eventStream) close(ctx context.Context) error {
	close(s.stop)
	s.done.Wait()
	return s.drain(context.WithoutCancel(ctx))
}

// printEvents prints a run's lifecycle events as a table or, asJSON, as JSON lines.
func printEvents(w io.Writer, run scripthost.Run, evs []ledger.LifecycleEvent, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, ev := range evs {
			if err := enc.Encode(view.LineOf(ev, run)); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, 0, len(evs))
	for _, ev := range evs {
		rows = append(rows, []string{fmt.Sprint(ev.Seq), ev.At.Format(time.RFC3339Nano), string(ev.Type), details(ev.Data)})
	}
	return table(w, "SEQ\tTIME\tEVENT\tDETAILS", rows)
}

// details renders an event's data as key=value pairs in key order; a place in a
// script (file, line, column) is one pair, at=file:line:col.
func details(data json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return oneLine(string(data), 120)
	}
	var where struct {
		File   string `json:"file"`
		Line   int    `json:"line"`
		Column int    `json:"column"`
	}
	if json.Unmarshal(data, &where) == nil && where.Line > 0 {
		delete(m, "file")
		delete(m, "line")
		delete(m, "column")
		m["at"], _ = json.Marshal(fmt.Sprintf("%s:%d:%d", where.File, where.Line, where.Column))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := string(m[k])
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			v = s
		}
		parts = append(parts, k+"="+oneLine(v, 120))
	}
	return strings.Join(parts, " ")
}
