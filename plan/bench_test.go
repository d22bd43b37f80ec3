package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkRunPlan runs a plan of five steps (three file_write mutations, a read, a
// glob) on a real SQLite ledger: each iteration is a new plan, so every mutation is
// recorded in flight, applied, and evidenced.
func BenchmarkRunPlan(b *testing.B) {
	e := newEnv(b, envOpts{})
	x, err := New(Options{Store: e.store, Registry: e.reg, Workspace: e.ws, Commands: e.cmds})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		p := &Plan{PlanID: fmt.Sprintf("bench%d", i), Intent: "bench"}
		for j := range 3 {
			p.Steps = append(p.Steps, Step{StepID: fmt.Sprintf("w%d", j), Tool: "file_write",
				Arguments: json.RawMessage(fmt.Sprintf(`{"path":"b/%d/%d.txt","content":"x"}`, i, j))})
		}
		p.Steps = append(p.Steps,
			Step{StepID: "r", Tool: "file_read", Arguments: json.RawMessage(fmt.Sprintf(`{"path":"b/%d/0.txt"}`, i))},
			Step{StepID: "g", Tool: "file_glob", Arguments: json.RawMessage(fmt.Sprintf(`{"pattern":"b/%d/*.txt"}`, i))})
		if _, err := x.Run(ctx, p, approved(p)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck measures the refusal checks (validation, authorization, schemas).
func BenchmarkCheck(b *testing.B) {
	e := newEnv(b, envOpts{})
	x, err := New(Options{Store: e.store, Registry: e.reg})
	if err != nil {
		b.Fatal(err)
	}
	p := mustPlan(b, evidencePlan)
	auth := approved(p)
	for b.Loop() {
		if err := x.Check(p, auth); err != nil {
			b.Fatal(err)
		}
	}
}
