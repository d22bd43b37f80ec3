package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
)

func TestParseDefinitionValid(t *testing.T) {
	d, err := ParseDefinition([]byte(`{
		"topics": ["files", "done"],
		"producers": {"scan": {"schedule": {"every": "5m"}, "publishes": ["files"], "handler": "producers.scan.handler"}},
		"consumers": {"process": {"subscribe": ["files"], "publishes": ["done"],
			"prepare": "consumers.process.prepare", "mutate": "consumers.process.mutate", "next": "consumers.process.next",
			"guard": "consumers.process.guard",
			"onError": {"strategy": "retry", "maxRetries": 2, "backoff": "exponential", "delayMs": 100}},
		  "sink": {"subscribe": ["done"], "prepare": "consumers.sink.prepare"}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Producers["scan"].Schedule.Every, 5*time.Minute; got != want {
		t.Errorf("schedule: got %v, want %v", got, want)
	}
	c := d.Consumers["process"]
	if c.Guard != "consumers.process.guard" || c.OnError.MaxRetries != 2 || c.OnError.Strategy != "retry" {
		t.Errorf("lifecycle: got %+v", c.Lifecycle)
	}
	if got, want := c.OnError.Delay(3), 400*time.Millisecond; got != want {
		t.Errorf("exponential delay(3): got %v, want %v", got, want)
	}
	if got, want := d.Consumers["sink"].OnError.Strategy, "fail"; got != want {
		t.Errorf("default strategy: got %q, want %q", got, want)
	}
}

// A topic nobody in the workflow subscribes to is an outbox, read by others through
// the ledger: legitimate.
func TestParseDefinitionOutboxAndName(t *testing.T) {
	d, err := ParseDefinition([]byte(`{"name": "shop-2.orders", "topics": ["out"],
		"producers": {"p": {"schedule": {"every": "1m"}, "publishes": ["out"], "handler": "h"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "shop-2.orders" {
		t.Errorf("name: got %q, want shop-2.orders", d.Name)
	}
}

func TestParseDefinitionCron(t *testing.T) {
	d, err := ParseDefinition([]byte(`{"topics": ["t"],
		"producers": {"p": {"schedule": {"cron": "*/15 * * * *"}, "publishes": ["t"], "handler": "h"}},
		"consumers": {"c": {"subscribe": ["t"], "prepare": "p"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 10, 7, 0, 0, time.UTC)
	if got, want := d.Producers["p"].Schedule.NextAfter(from), time.Date(2026, 1, 1, 10, 15, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("cron next: got %v, want %v", got, want)
	}
}

func TestParseDefinitionProblems(t *testing.T) {
	tests := []struct {
		name string
		def  string
		want []string
	}{
		{"undeclared topic", `{"topics": ["a"], "consumers": {"c": {"subscribe": ["b"], "prepare": "p"}}}`,
			[]string{`consumer c: subscribes to undeclared topic "b"`}},
		{"publishes without next", `{"topics": ["a", "b"], "consumers": {"c": {"subscribe": ["a"], "publishes": ["b"], "prepare": "p"}, "d": {"subscribe": ["b"], "prepare": "p"}}}`,
			[]string{"consumer c: publishes [b] but has no next function"}},
		{"bad name", `{"name": "my shop", "topics": ["a"], "consumers": {"c": {"subscribe": ["a"], "prepare": "p"}}}`,
			[]string{`name: "my shop" is not a workflow name`}},
		{"name not a string", `{"name": 3, "topics": ["a"], "consumers": {"c": {"subscribe": ["a"], "prepare": "p"}}}`,
			[]string{"definition is not an object"}},
		{"bad every", `{"topics": ["a"], "producers": {"p": {"schedule": {"every": "often"}, "publishes": [], "handler": "h"}}}`,
			[]string{`producer p: bad schedule: every "often"`}},
		{"bad cron", `{"topics": [], "producers": {"p": {"schedule": {"cron": "61 * * * *"}, "handler": "h"}}}`,
			[]string{`producer p: bad schedule: cron "61 * * * *"`}},
		{"missing schedule", `{"topics": [], "producers": {"p": {"handler": "h"}}}`,
			[]string{"producer p: missing schedule"}},
		{"missing prepare", `{"topics": ["a"], "consumers": {"c": {"subscribe": ["a"]}}}`,
			[]string{"consumer c: missing function prepare"}},
		{"missing handler", `{"topics": [], "producers": {"p": {"schedule": {"every": "1m"}}}}`,
			[]string{"producer p: missing function handler"}},
		{"not a function", `{"topics": ["a"], "consumers": {"c": {"subscribe": ["a"], "prepare": 42}}}`,
			[]string{"consumer c: prepare must be a function, got 42"}},
		{"bad strategy", `{"topics": ["a"], "consumers": {"c": {"subscribe": ["a"], "prepare": "p", "onError": {"strategy": "explode"}}}}`,
			[]string{`consumer c: onError.strategy "explode"`}},
		{"unknown onError field", `{"topics": ["a"], "consumers": {"c": {"subscribe": ["a"], "prepare": "p", "onError": {"retries": 3}}}}`,
			[]string{`consumer c: onError: json: unknown field "retries"`}},
		{"empty", `{"topics": []}`, []string{"declares no producers and no consumers"}},
		{"not an object", `[1,2]`, []string{"definition is not an object"}},
		{"several at once", `{"topics": ["a"], "consumers": {"c": {"subscribe": ["x"]}}}`,
			[]string{`subscribes to undeclared topic "x"`, "missing function prepare"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDefinition([]byte(tt.def))
			if err == nil {
				t.Fatal("got no error, want one")
			}
			if !scripthost.IsLogic(err) {
				t.Errorf("class: got %v, want logic", scripthost.ClassOf(err))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestWorkflowName(t *testing.T) {
	tests := map[string]string{
		"/srv/scripts/files/workflow.js": "files",
		"/srv/orders.ts":                 "orders",
		"/srv/dir/billing.wasm":          "billing",
		"/workflow.js":                   "workflow",
	}
	for in, want := range tests {
		if got := WorkflowName(in); got != want {
			t.Errorf("WorkflowName(%q): got %q, want %q", in, got, want)
		}
	}
}
