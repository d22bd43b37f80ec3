package hostfuncs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// DefaultPeekLimit is how many events Topics.peek returns when no limit is given.
const DefaultPeekLimit = 100

// MaxPeekLimit is the largest limit Topics.peek accepts.
const MaxPeekLimit = 1000

// PeekedEvent is one element of Topics.peek's result.
type PeekedEvent struct {
	ID      string          `json:"id"`
	Topic   string          `json:"topic"`
	Payload json.RawMessage `json:"payload"`
	Attempt int             `json:"attempt"`
}

type peekInput struct {
	Topic string `json:"topic"`
	Limit int    `json:"limit"`
}

type publishInput struct {
	Topic   string          `json:"topic"`
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

// TopicsPeek is the built-in Topics.peek tool: the pending events of the run's workflow
// on one of the handler's subscribed topics, oldest first. It only works inside a
// ToolWrapper, which supplies the run.
var TopicsPeek = &Tool{
	Namespace:   "Topics",
	Method:      "peek",
	Description: "List pending events of a subscribed topic, oldest first.",
	Operation:   scripthost.OpTopicPeek,
	InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"topic": {"type": "string", "minLength": 1},
			"limit": {"type": "integer", "minimum": 1, "maximum": 1000}
		},
		"required": ["topic"],
		"additionalProperties": false
	}`),
	Execute: func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		w, err := wrapperFrom(ctx, "Topics.peek")
		if err != nil {
			return nil, err
		}
		var in peekInput
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "Topics.peek: %v", err)
		}
		if !slices.Contains(w.info.Subscribes, in.Topic) {
			return nil, scripthost.LogicError("Topics.peek: topic %q is not among the handler's subscriptions %v", in.Topic, w.info.Subscribes)
		}
		limit := in.Limit
		if limit <= 0 {
			limit = DefaultPeekLimit
		}
		events, ok := w.info.Peeked.answer(in.Topic, limit)
		if !ok {
			if events, err = w.store.PendingEvents(ctx, w.info.Workflow, in.Topic, limit); err != nil {
				return nil, ledgerError("Topics.peek", err)
			}
		}
		w.notePeek(in.Topic, events)
		out := make([]PeekedEvent, 0, len(events))
		for _, e := range events {
			out = append(out, PeekedEvent{ID: e.MessageID, Topic: e.Topic, Payload: e.Payload, Attempt: e.Attempt})
		}
		return json.Marshal(out)
	},
}

// TopicsPublish is the built-in Topics.publish tool. It does not write anything: the
// ToolWrapper buffers the event and the runtime stores the buffer in the same
// transaction as the run's commit, so a phase that is run again after a crash
// publishes nothing twice. The message id defaults to a hash of the topic and the
// canonical payload; publishing an id the topic already has is a no-op.
var TopicsPublish = &Tool{
	Namespace:   "Topics",
	Method:      "publish",
	Description: "Publish an event on a declared topic when the run commits.",
	Operation:   scripthost.OpTopicPublish,
	InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"topic": {"type": "string", "minLength": 1},
			"id": {"type": "string", "minLength": 1, "maxLength": 200},
			"payload": {}
		},
		"required": ["topic", "payload"],
		"additionalProperties": false
	}`),
	Execute: func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		w, err := wrapperFrom(ctx, "Topics.publish")
		if err != nil {
			return nil, err
		}
		var in publishInput
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "Topics.publish: %v", err)
		}
		if !slices.Contains(w.info.Publishes, in.Topic) {
			return nil, scripthost.LogicError("Topics.publish: topic %q is not declared in the handler's publishes %v", in.Topic, w.info.Publishes)
		}
		payload, err := scripthost.CanonicalJSON(in.Payload)
		if err != nil {
			return nil, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeInvalidInput, "Topics.publish: payload: %v", err)
		}
		id := in.ID
		if id == "" {
			id = EventID(in.Topic, payload)
		}
		w.publish(ledger.NewEvent{
			Workflow:  w.info.Workflow,
			Topic:     in.Topic,
			MessageID: id,
			Payload:   payload,
			CausedBy:  w.info.RunID,
		})
		return json.Marshal(map[string]string{"id": id, "topic": in.Topic})
	},
}

// EventID is the default message id of an event: a hash of its topic and canonical
// payload, so that publishing the same payload twice gives one event.
func EventID(topic string, canonicalPayload []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s", len(topic), topic)
	h.Write(canonicalPayload)
	return "ev_" + hex.EncodeToString(h.Sum(nil)[:16])
}

// TopicTools returns the built-in topic tools.
func TopicTools() []*Tool { return []*Tool{TopicsPeek, TopicsPublish} }

// RegisterBuiltins registers the built-in topic tools in reg. A ToolWrapper offers them
// even when its registry lacks them; registering them makes them visible to anything
// else that lists the registry.
func RegisterBuiltins(reg *Registry) error {
	return reg.Register(TopicTools()...)
}

type wrapperKey struct{}

func withWrapper(ctx context.Context, w *ToolWrapper) context.Context {
	return context.WithValue(ctx, wrapperKey{}, w)
}

func wrapperFrom(ctx context.Context, tool string) (*ToolWrapper, error) {
	w, ok := ctx.Value(wrapperKey{}).(*ToolWrapper)
	if !ok {
		return nil, scripthost.Errorf(scripthost.ClassInternal, "", "%s: called outside a ToolWrapper", tool)
	}
	return w, nil
}

// notePeek records the events a Topics.peek answered with, for Peeks.
func (w *ToolWrapper) notePeek(topic string, events []scripthost.Event) {
	if len(events) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.peeks, func(r scripthost.Reservation) bool { return r.Topic == topic })
	if i < 0 {
		w.peeks = append(w.peeks, scripthost.Reservation{Topic: topic})
		i = len(w.peeks) - 1
	}
	for _, e := range events {
		if !slices.Contains(w.peeks[i].IDs, e.MessageID) {
			w.peeks[i].IDs = append(w.peeks[i].IDs, e.MessageID)
		}
	}
}

// Peeks are the events the run's Topics.peek calls answered with, by topic in the
// order first seen: what a prepare phase that failed was looking at.
func (w *ToolWrapper) Peeks() []scripthost.Reservation {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]scripthost.Reservation, 0, len(w.peeks))
	for _, r := range w.peeks {
		out = append(out, scripthost.Reservation{Topic: r.Topic, IDs: slices.Clone(r.IDs)})
	}
	return out
}
