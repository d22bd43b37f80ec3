package runtime

import (
	"fmt"
	"testing"

	"github.com/scripthost/scripthost/sandbox"
)

// TestConsumerGroups: consumers joined by a topic (both subscribe, or one publishes
// what the other subscribes to), directly or through another consumer, are one group; deterministic mode and a concurrency of one make one group.
func TestConsumerGroups(t *testing.T) {
	def := &Definition{Consumers: map[string]*Consumer{
		"a": {Name: "a", Subscribe: []string{"t1"}},
		"b": {Name: "b", Subscribe: []string{"t1", "t2"}},
		"c": {Name: "c", Subscribe: []string{"t2"}},
		"d": {Name: "d", Subscribe: []string{"t3"}},
		"e": {Name: "e", Subscribe: []string{"t4", "t3"}},
		"f": {Name: "f", Publishes: []string{"t5"}},
		"g": {Name: "g", Subscribe: []string{"t6"}},
		"h": {Name: "h", Subscribe: []string{"t5"}},
	}}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"side by side", Config{Concurrency: 8}, "[[a b c] [d e] [f h] [g]]"},
		{"deterministic", Config{Concurrency: 8, Deterministic: &sandbox.Determinism{}}, "[[a b c d e f g h]]"},
		{"one at a time", Config{Concurrency: 1}, "[[a b c d e f g h]]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := &Runtime{cfg: c.cfg}
			if got := fmt.Sprint(rt.consumerGroups(def)); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}
