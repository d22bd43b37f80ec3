// Package runtime owns the life of handler runs: the workflow definition and its
// validation, the run state machine that drives a run from pending to committed (the
// same code for a first run and after a restart), error routing and retries, the
// scheduler that decides what runs next, and reconciliation of uncertain mutations.
//
// It talks to engines through the sandbox contract, to the ledger through ledger.Store,
// and to tools through hostfuncs; it never picks a concrete engine or database.
package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/scripthost/scripthost"
)

// Definition is a validated workflow definition.
type Definition struct {
	// Name is the workflow's name as the definition declares it ("" when it does not).
	Name      string
	Topics    []string
	Producers map[string]*Producer
	Consumers map[string]*Consumer
}

// Lifecycle holds the optional phase hooks and the error policy of a handler.
type Lifecycle struct {
	// Guard, Before and After are function references ("" when absent).
	Guard   string
	Before  string
	After   string
	OnError ErrorPolicy
}

// ErrorPolicy says what happens when a phase fails.
type ErrorPolicy struct {
	// Strategy is "fail" (default), "retry" or "pause".
	Strategy   string `json:"strategy"`
	MaxRetries int    `json:"maxRetries"`
	// Backoff is "fixed" (default) or "exponential".
	Backoff string `json:"backoff"`
	DelayMS int    `json:"delayMs"`
	// OnRetry is a function reference ("" when absent): onRetry(error, state) runs
	// before each retry made by this policy, with no tools, and returns the state the
	// retry starts from.
	OnRetry string `json:"onRetry"`
}

// Delay returns the wait before retry number attempt (1-based).
func (p ErrorPolicy) Delay(attempt int) time.Duration {
	d := time.Duration(p.DelayMS) * time.Millisecond
	if p.Backoff == "exponential" && attempt > 1 {
		for i := 1; i < attempt && d < time.Hour; i++ {
			d *= 2
		}
	}
	return d
}

// Producer is a handler that runs on a schedule and publishes events.
type Producer struct {
	Name      string
	Schedule  Schedule
	Publishes []string
	Handler   string
	Lifecycle
}

// Consumer is a handler that runs prepare → mutate → next on events.
type Consumer struct {
	Name      string
	Subscribe []string
	Publishes []string
	Prepare   string
	Mutate    string
	Next      string
	// OnMutationFailure says where a definite failure of the mutation goes.
	OnMutationFailure MutationFailurePolicy
	Lifecycle
}

// MutationFailurePolicy is a consumer's onMutationFailure: 'fail' (the default: the
// run fails, its events are released and a fresh run prepares again) or 'next' (the
// run goes on to next with result {status: 'failed', error}); with 'next' the events
// are consumed at commit unless events: 'release' gives them back at once.
type MutationFailurePolicy struct {
	Next    bool
	Release bool
}

// Schedule is a producer's schedule: a fixed interval or a cron expression.
type Schedule struct {
	Every time.Duration
	Cron  string
	cron  cron.Schedule
}

// NextAfter returns the first scheduled time strictly after t.
func (s Schedule) NextAfter(t time.Time) time.Time {
	if s.cron != nil {
		return s.cron.Next(t)
	}
	return t.Add(s.Every)
}

// String renders the schedule as written.
func (s Schedule) String() string {
	if s.Cron != "" {
		return "cron " + s.Cron
	}
	return "every " + s.Every.String()
}

// rawDefinition mirrors the JSON a sandbox's Definition returns.
type rawDefinition struct {
	Name      *string                    `json:"name"`
	Topics    []string                   `json:"topics"`
	Producers map[string]json.RawMessage `json:"producers"`
	Consumers map[string]json.RawMessage `json:"consumers"`
}

type rawHandler struct {
	Schedule *struct {
		Every any    `json:"every"`
		Cron  string `json:"cron"`
	} `json:"schedule"`
	Publishes []string        `json:"publishes"`
	Subscribe []string        `json:"subscribe"`
	Handler   json.RawMessage `json:"handler"`
	Prepare   json.RawMessage `json:"prepare"`
	Mutate    json.RawMessage `json:"mutate"`
	Next      json.RawMessage `json:"next"`
	Guard     json.RawMessage `json:"guard"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
	OnError   json.RawMessage `json:"onError"`

	OnMutationFailure json.RawMessage `json:"onMutationFailure"`
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseDefinition validates a definition and returns every problem found at once, each
// naming the handler. Errors are logic errors with code invalid_workflow.
func ParseDefinition(raw json.RawMessage) (*Definition, error) {
	var rd rawDefinition
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if err := dec.Decode(&rd); err != nil {
		return nil, invalid([]string{fmt.Sprintf("definition is not an object with topics, producers and consumers: %v", err)})
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	d := &Definition{Producers: map[string]*Producer{}, Consumers: map[string]*Consumer{}}
	if rd.Name != nil {
		if err := CheckName(*rd.Name); err != nil {
			add("name: %v", err)
		}
		d.Name = *rd.Name
	}
	topics := map[string]bool{}
	for _, t := range rd.Topics {
		if t == "" {
			add("topics: empty topic name")
			continue
		}
		if topics[t] {
			add("topics: %q declared twice", t)
		}
		topics[t] = true
		d.Topics = append(d.Topics, t)
	}
	if len(rd.Producers) == 0 && len(rd.Consumers) == 0 {
		add("definition declares no producers and no consumers")
	}

	for _, name := range slices.Sorted(maps.Keys(rd.Producers)) {
		where := "producer " + name
		var h rawHandler
		if err := json.Unmarshal(rd.Producers[name], &h); err != nil {
			add("%s: not an object: %v", where, err)
			continue
		}
		p := &Producer{Name: name, Publishes: h.Publishes}
		p.Handler = fnRef(h.Handler, where, "handler", true, add)
		p.Lifecycle = lifecycle(h, where, add)
		if h.Subscribe != nil {
			add("%s: a producer cannot subscribe to topics (make it a consumer)", where)
		}
		if len(h.OnMutationFailure) > 0 && string(h.OnMutationFailure) != "null" {
			add("%s: producers make no mutation: onMutationFailure belongs to consumers", where)
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"prepare", h.Prepare}, {"mutate", h.Mutate}, {"next", h.Next}} {
			if len(f.raw) > 0 && string(f.raw) != "null" {
				add("%s: producers have a handler, not %s", where, f.name)
			}
		}
		if h.Schedule == nil {
			add("%s: missing schedule ({every: '5m'} or {cron: '*/5 * * * *'})", where)
		} else {
			s, err := parseSchedule(h.Schedule.Every, h.Schedule.Cron)
			if err != nil {
				add("%s: bad schedule: %v", where, err)
			}
			p.Schedule = s
		}
		for _, t := range h.Publishes {
			if !topics[t] {
				add("%s: publishes undeclared topic %q", where, t)
			}
		}
		d.Producers[name] = p
	}

	for _, name := range slices.Sorted(maps.Keys(rd.Consumers)) {
		where := "consumer " + name
		if _, dup := d.Producers[name]; dup {
			add("%s: the name is also a producer's", where)
		}
		var h rawHandler
		if err := json.Unmarshal(rd.Consumers[name], &h); err != nil {
			add("%s: not an object: %v", where, err)
			continue
		}
		c := &Consumer{Name: name, Subscribe: h.Subscribe, Publishes: h.Publishes}
		c.Prepare = fnRef(h.Prepare, where, "prepare", true, add)
		c.Mutate = fnRef(h.Mutate, where, "mutate", false, add)
		c.Next = fnRef(h.Next, where, "next", false, add)
		c.Lifecycle = lifecycle(h, where, add)
		c.OnMutationFailure = mutationFailure(h.OnMutationFailure, where, add)
		if c.OnMutationFailure.Next && c.Next == "" {
			add("%s: onMutationFailure 'next' needs a next function", where)
		}
		if h.Schedule != nil {
			add("%s: consumers run on events, not on a schedule (make it a producer)", where)
		}
		if len(h.Handler) > 0 && string(h.Handler) != "null" {
			add("%s: consumers have prepare/mutate/next, not handler", where)
		}
		if len(h.Subscribe) == 0 {
			add("%s: subscribes to no topic", where)
		}
		for _, t := range h.Subscribe {
			if !topics[t] {
				add("%s: subscribes to undeclared topic %q", where, t)
			}
		}
		if len(h.Publishes) > 0 && c.Next == "" {
			add("%s: publishes %v but has no next function (only next may publish)", where, h.Publishes)
		}
		for _, t := range h.Publishes {
			if !topics[t] {
				add("%s: publishes undeclared topic %q", where, t)
			}
		}
		d.Consumers[name] = c
	}

	if len(problems) > 0 {
		return nil, invalid(problems)
	}
	return d, nil
}

// validName is what a workflow name declared with name: or --name may look like: it
// appears in file names, URLs and command lines.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// CheckName reports whether name may name a workflow.
func CheckName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("%q is not a workflow name (1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit)", name)
	}
	return nil
}

func lifecycle(h rawHandler, where string, add func(string, ...any)) Lifecycle {
	l := Lifecycle{
		Guard:  fnRef(h.Guard, where, "guard", false, add),
		Before: fnRef(h.Before, where, "before", false, add),
		After:  fnRef(h.After, where, "after", false, add),
	}
	l.OnError = ErrorPolicy{Strategy: "fail", Backoff: "fixed", DelayMS: 1000}
	if len(h.OnError) > 0 && string(h.OnError) != "null" {
		dec := json.NewDecoder(strings.NewReader(string(h.OnError)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l.OnError); err != nil {
			add("%s: onError: %v (fields: strategy, maxRetries, backoff, delayMs, onRetry)", where, err)
		}
		switch l.OnError.Strategy {
		case "fail", "retry", "pause":
		default:
			add("%s: onError.strategy %q: want 'fail', 'retry' or 'pause'", where, l.OnError.Strategy)
		}
		switch l.OnError.Backoff {
		case "fixed", "exponential":
		default:
			add("%s: onError.backoff %q: want 'fixed' or 'exponential'", where, l.OnError.Backoff)
		}
		if l.OnError.OnRetry != "" && l.OnError.Strategy != "retry" {
			add("%s: onError.onRetry runs before retries: it needs strategy 'retry', not %q", where, l.OnError.Strategy)
		}
		if l.OnError.MaxRetries < 0 || l.OnError.DelayMS < 0 {
			add("%s: onError.maxRetries and delayMs must not be negative", where)
		}
	}
	return l
}

// mutationFailure reads onMutationFailure: 'fail', 'next', or {strategy: 'fail'|'next',
// events: 'consume'|'release'}.
func mutationFailure(raw json.RawMessage, where string, add func(string, ...any)) MutationFailurePolicy {
	var p MutationFailurePolicy
	if len(raw) == 0 || string(raw) == "null" {
		return p
	}
	v := struct {
		Strategy string `json:"strategy"`
		Events   string `json:"events"`
	}{Events: "consume"}
	if err := json.Unmarshal(raw, &v.Strategy); err != nil {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			add("%s: onMutationFailure: want 'fail', 'next' or {strategy: 'next', events: 'consume'|'release'}, got %s", where, truncate(string(raw), 60))
			return p
		}
	}
	switch v.Strategy {
	case "fail":
	case "next":
		p.Next = true
	default:
		add("%s: onMutationFailure strategy %q: want 'fail' or 'next'", where, v.Strategy)
	}
	switch v.Events {
	case "consume":
	case "release":
		p.Release = true
	default:
		add("%s: onMutationFailure events %q: want 'consume' or 'release'", where, v.Events)
	}
	if p.Release && !p.Next {
		add("%s: onMutationFailure events applies to strategy 'next' only", where)
	}
	return p
}

// fnRef reads a function reference: a string the engine gave in place of a function.
func fnRef(raw json.RawMessage, where, field string, required bool, add func(string, ...any)) string {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			add("%s: missing function %s", where, field)
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		add("%s: %s must be a function, got %s", where, field, truncate(string(raw), 40))
		return ""
	}
	return s
}

func parseSchedule(every any, cronExpr string) (Schedule, error) {
	switch {
	case every != nil && cronExpr != "":
		return Schedule{}, errors.New("give either every or cron, not both")
	case cronExpr != "":
		cs, err := cronParser.Parse(cronExpr)
		if err != nil {
			return Schedule{}, fmt.Errorf("cron %q: %v", cronExpr, err)
		}
		return Schedule{Cron: cronExpr, cron: cs}, nil
	case every != nil:
		var d time.Duration
		switch v := every.(type) {
		case string:
			var err error
			if d, err = time.ParseDuration(v); err != nil {
				return Schedule{}, fmt.Errorf("every %q: want a duration like '30s', '5m' or '1h'", v)
			}
		case float64:
			d = time.Duration(v) * time.Millisecond
		default:
			return Schedule{}, fmt.Errorf("every: want a duration string, got %v", v)
		}
		if d < time.Second {
			return Schedule{}, fmt.Errorf("every %v: the shortest interval is 1s", d)
		}
		return Schedule{Every: d}, nil
	}
	return Schedule{}, errors.New("give every or cron")
}

func invalid(problems []string) error {
	msg := "invalid workflow definition:\n  - " + strings.Join(problems, "\n  - ")
	return &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, Message: msg}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Handler returns the lifecycle, kind and declared topics of the named handler.
func (d *Definition) Handler(name string) (scripthost.HandlerKind, bool) {
	if _, ok := d.Producers[name]; ok {
		return scripthost.KindProducer, true
	}
	if _, ok := d.Consumers[name]; ok {
		return scripthost.KindConsumer, true
	}
	return "", false
}
