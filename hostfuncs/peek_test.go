package hostfuncs

import (
	"testing"

	"github.com/scripthost/scripthost"
)

// TestPeekedAnswer: the events read before a run answer its Topics.peek only when they
// are what the ledger would return: as many as asked for, or all that were pending.
func TestPeekedAnswer(t *testing.T) {
	three := []scripthost.Event{{Seq: 1}, {Seq: 2}, {Seq: 3}}
	cases := []struct {
		name    string
		peeked  *Peeked
		topic   string
		limit   int
		want    int
		answers bool
	}{
		{"nothing read", nil, "in", 1, 0, false},
		{"other topic", &Peeked{Limit: 1, Events: map[string][]scripthost.Event{"in": three[:1]}}, "other", 1, 0, false},
		{"as many as read", &Peeked{Limit: 1, Events: map[string][]scripthost.Event{"in": three[:1]}}, "in", 1, 1, true},
		{"more than read, more may be pending", &Peeked{Limit: 1, Events: map[string][]scripthost.Event{"in": three[:1]}}, "in", 100, 0, false},
		{"fewer than read", &Peeked{Limit: 3, Events: map[string][]scripthost.Event{"in": three}}, "in", 2, 2, true},
		{"all that were pending", &Peeked{Limit: 1000, Events: map[string][]scripthost.Event{"in": three}}, "in", 100, 3, true},
		{"none pending", &Peeked{Limit: 1, Events: map[string][]scripthost.Event{"in": nil}}, "in", 100, 0, true},
		// Events kept from an earlier read: every list holds Limit or more events, so a
		// peek is answered only when it asks for at most as many as its topic's list.
		{"kept, as many as kept", &Peeked{Limit: 2, Events: map[string][]scripthost.Event{"in": three, "b": three[:2]}}, "in", 3, 3, true},
		{"kept, more than kept", &Peeked{Limit: 2, Events: map[string][]scripthost.Event{"in": three, "b": three[:2]}}, "in", 4, 0, false},
		{"kept, more than kept on the shorter list", &Peeked{Limit: 2, Events: map[string][]scripthost.Event{"in": three, "b": three[:2]}}, "b", 3, 0, false},
		{"kept, topic with nothing kept", &Peeked{Limit: 2, Events: map[string][]scripthost.Event{"in": three}}, "b", 1, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.peeked.answer(c.topic, c.limit)
			if ok != c.answers || len(got) != c.want {
				t.Errorf("got %d events, answered %v; want %d, %v", len(got), ok, c.want, c.answers)
			}
		})
	}
}
