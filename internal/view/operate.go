package view

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
)

// AuditPlan is the plan id under which the execution log keeps operator actions: each
// action is execution _operator/N/ACTION with one step named after the action. Plan
// ids cannot start with an underscore, so no plan shares it.
const AuditPlan = "_operator"

// Action is one operator action to record in the audit trail.
type Action struct {
	Name    string
	Target  string
	By      string
	Request any
	// Result is what the action answered, Err why it was refused.
	Result         any
	Err            error
	Started, Ended time.Time
}

// RecordAction writes a into the audit trail (the execution log under AuditPlan), done
// or refused, with who asked for it. The CLI and scripthost serve record into the one
// trail, so /api/v1/actions lists both.
func RecordAction(ctx context.Context, store ledger.Store, a Action) error {
	ctx = context.WithoutCancel(ctx)
	args, err := json.Marshal(map[string]any{"target": a.Target, "by": a.By, "request": a.Request})
	if err != nil {
		return fmt.Errorf("operator action %s: %w", a.Name, err)
	}
	rec := ledger.ExecutionRecord{PlanID: AuditPlan, StepID: a.Name, Seq: 1, Tool: "operator." + a.Name, Arguments: args,
		StartedAt: a.Started, EndedAt: a.Ended, DurationMS: a.Ended.Sub(a.Started).Milliseconds(), Success: a.Err == nil}
	if a.Err != nil {
		rec.Error = a.Err.Error()
	} else if rec.Result, _ = json.Marshal(a.Result); string(rec.Result) == "null" {
		rec.Result = nil
	}
	n, err := store.ReserveExecution(ctx, AuditPlan)
	if err != nil {
		return err
	}
	rec.ExecutionID = fmt.Sprintf("%s/%d/%s", AuditPlan, n, a.Name)
	return store.AppendExecution(ctx, rec)
}

// RunEvent is one event a run worked on: reserved by it, or peeked at by its prepare
// phase before that failed; Status is the event's status now.
type RunEvent struct {
	Topic  string                 `json:"topic"`
	ID     string                 `json:"id"`
	How    string                 `json:"how"`
	Status scripthost.EventStatus `json:"status,omitempty"`
}

// RunEvents lists the events run worked on: those it reserved, and those the
// phase_failed entry of its lifecycle log names (reserved or peeked), each once,
// with its status now. lifecycle is the run's log (nil: read it).
func RunEvents(ctx context.Context, store ledger.Store, run scripthost.Run, lifecycle []ledger.LifecycleEvent) ([]RunEvent, error) {
	if lifecycle == nil {
		var err error
		if lifecycle, err = store.LifecycleEvents(ctx, ledger.LifecycleFilter{RunID: run.ID}); err != nil {
			return nil, err
		}
	}
	var out []RunEvent
	add := func(how string, rs []scripthost.Reservation) {
		for _, r := range rs {
			for _, id := range r.IDs {
				if !slices.ContainsFunc(out, func(e RunEvent) bool { return e.Topic == r.Topic && e.ID == id }) {
					out = append(out, RunEvent{Topic: r.Topic, ID: id, How: how})
				}
			}
		}
	}
	add("reserved", run.Reservations)
	for i := len(lifecycle) - 1; i >= 0; i-- {
		ev := lifecycle[i]
		if ev.Type != ledger.EventPhaseFailed {
			continue
		}
		var d struct {
			Reserved []scripthost.Reservation `json:"reserved"`
			Peeked   []scripthost.Reservation `json:"peeked"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return nil, fmt.Errorf("run %s: lifecycle entry %d: %w", run.ID, ev.Seq, err)
		}
		add("reserved", d.Reserved)
		add("peeked", d.Peeked)
		break
	}
	for i, e := range out {
		evs, err := store.Events(ctx, ledger.EventFilter{Workflow: run.Workflow, Topic: e.Topic, MessageID: e.ID})
		if err != nil {
			return nil, err
		}
		if len(evs) == 1 {
			out[i].Status = evs[0].Status
		}
	}
	return out, nil
}

// Definition is the definition of the newest stored version of workflow.
func Definition(ctx context.Context, store ledger.Store, workflow string) (*runtime.Definition, error) {
	v, err := store.WorkflowVersion(ctx, workflow, 0)
	if err != nil {
		return nil, err
	}
	def, err := runtime.ParseDefinition(v.Definition)
	if err != nil {
		return nil, fmt.Errorf("workflow %s version %d: %w", workflow, v.Version, err)
	}
	return def, nil
}

// ErrBadEvent is a publication or skip refused for what it asked: an undeclared
// topic, an empty id or a payload that is not JSON.
var ErrBadEvent = errors.New("bad event")

// ErrEventConflict refuses a publication of an id the topic already has under another
// payload: an id names one event.
var ErrEventConflict = errors.New("event id taken")

// checkTopic refuses a topic the newest stored version of workflow does not declare.
func checkTopic(ctx context.Context, store ledger.Store, workflow, topic string) (*runtime.Definition, error) {
	def, err := Definition(ctx, store, workflow)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(def.Topics, topic) {
		return nil, fmt.Errorf("%w: workflow %s declares no topic %q (its topics: %s)", ErrBadEvent, workflow, topic,
			strings.Join(def.Topics, ", "))
	}
	return def, nil
}

// Published is the answer to a publication: the stored event, and whether an earlier
// publication had stored it already.
type Published struct {
	Event     scripthost.Event `json:"event"`
	Duplicate bool             `json:"duplicate"`
}

// Publish stores one event from outside any run on a topic the workflow's newest
// stored version declares, through publish (host.Host.Publish or the store's). It is
// idempotent by id: the same id with the same payload (compared as JSON) stores
// nothing more and says so; with another payload it is refused (ErrBadEvent).
func Publish(ctx context.Context, store ledger.Store, publish func(context.Context, ...ledger.NewEvent) ([]scripthost.Event, error),
	workflow, topic, id string, payload json.RawMessage) (Published, error) {
	if strings.TrimSpace(id) == "" {
		return Published{}, fmt.Errorf("%w: the event id is empty: give the id that makes a second publication of it a no-op", ErrBadEvent)
	}
	if !json.Valid(payload) {
		return Published{}, fmt.Errorf("%w: the payload is not valid JSON", ErrBadEvent)
	}
	if _, err := checkTopic(ctx, store, workflow, topic); err != nil {
		return Published{}, err
	}
	f := ledger.EventFilter{Workflow: workflow, Topic: topic, MessageID: id}
	have, err := store.Events(ctx, f)
	if err != nil {
		return Published{}, err
	}
	dup := len(have) > 0
	if !dup {
		evs, err := publish(ctx, ledger.NewEvent{Workflow: workflow, Topic: topic, MessageID: id, Payload: payload})
		if err != nil {
			return Published{}, err
		}
		if len(evs) != 1 {
			return Published{}, fmt.Errorf("publish %s/%s/%s: stored %d events, want 1", workflow, topic, id, len(evs))
		}
		have = evs
	}
	ev := have[0]
	if !sameJSON(ev.Payload, payload) {
		return Published{}, fmt.Errorf("%w: event %s/%s/%s was published already with another payload (%s): "+
			"an id names one event; publish the new payload under a new id", ErrEventConflict, workflow, topic, id, oneLine(ev.Payload, 120))
	}
	return Published{Event: ev, Duplicate: dup}, nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func oneLine(b []byte, n int) string {
	s := strings.ReplaceAll(string(b), "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Skipped is the answer to skipping an event: the event, whether it was skipped
// already, and the retries created for the runs that failed on it (the handlers
// blocked by it), each of which the next run or serve loop picks up.
type Skipped struct {
	Event     scripthost.Event `json:"event"`
	Already   bool             `json:"already"`
	Retried   []Retried        `json:"retried"`
	Unblocked []string         `json:"unblocked"`
}

// Retried is a run retried and its retry.
type Retried struct {
	Source scripthost.Run `json:"source"`
	Retry  scripthost.Run `json:"retry"`
}

// SkipEvent sets a poison event aside: the event becomes skipped (it stays listed),
// and each consumer of its topic whose newest run failed or paused on it (the event is
// among the run's reserved or peeked events) gets a retry of that run on the newest
// version, which prepares again without the event. Skipping an event already skipped
// creates the retries a crash may have left undone, and nothing else.
func SkipEvent(ctx context.Context, store ledger.Store, workflow, topic, id string) (Skipped, error) {
	if strings.TrimSpace(id) == "" {
		return Skipped{}, fmt.Errorf("%w: the event id is empty", ErrBadEvent)
	}
	def, err := Definition(ctx, store, workflow)
	if err != nil {
		return Skipped{}, err
	}
	before, err := store.Events(ctx, ledger.EventFilter{Workflow: workflow, Topic: topic, MessageID: id})
	if err != nil {
		return Skipped{}, err
	}
	ev, err := store.SkipEvent(ctx, workflow, topic, id)
	if err != nil {
		return Skipped{}, err
	}
	out := Skipped{Event: ev, Already: len(before) == 1 && before[0].Status == scripthost.EventSkipped,
		Retried: []Retried{}, Unblocked: []string{}}
	for _, name := range slices.Sorted(maps.Keys(def.Consumers)) {
		if !slices.Contains(def.Consumers[name].Subscribe, topic) {
			continue
		}
		last, err := store.Runs(ctx, ledger.RunFilter{Workflow: workflow, Handler: name, Newest: true, Limit: 1})
		if err != nil {
			return out, err
		}
		if len(last) == 0 {
			continue
		}
		run := last[0]
		if run.SupersededBy != "" || !(run.Status.Failed() || run.Status.Paused()) {
			continue
		}
		evs, err := RunEvents(ctx, store, run, nil)
		if err != nil {
			return out, err
		}
		if !slices.ContainsFunc(evs, func(e RunEvent) bool { return e.Topic == topic && e.ID == id }) {
			continue
		}
		src, retry, err := Retry(ctx, store, run.ID, 0)
		if err != nil {
			return out, fmt.Errorf("event %s/%s/%s skipped, but retrying run %s of %s failed: %w", workflow, topic, id, run.ID, name, err)
		}
		out.Retried = append(out.Retried, Retried{Source: src, Retry: retry})
		out.Unblocked = append(out.Unblocked, name)
	}
	return out, nil
}
