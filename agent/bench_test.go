package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// benchExecutor is an executor on a fresh ledger and workspace whose model answers at
// once, in process: turn 1 with calls, then complete_step.
func benchExecutor(b *testing.B, calls func() []ToolCall) (*Executor, *workspace.Workspace, ledger.Store) {
	b.Helper()
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("some file content\n"), 0o644)
	ws, err := workspace.New(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	reg := hostfuncs.NewRegistry()
	reg.Register(ws.Tools()...)
	drv := DriverFunc(func(_ context.Context, r Request) (Response, error) {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == "tool" || calls == nil {
			return Response{Message: Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "c", Name: CompleteTool, Arguments: `{"summary":"done"}`}}}, Usage: Usage{10, 5}}, nil
		}
		return Response{Message: Message{Role: "assistant", ToolCalls: calls()}, Usage: Usage{10, 5}}, nil
	})
	x, err := New(Options{Store: store, Registry: reg, Driver: drv, Workspace: ws, Approvals: Approvals{FileWrite: Auto}})
	if err != nil {
		b.Fatal(err)
	}
	return x, ws, store
}

var benchTask = &Task{Goal: "g", Steps: []Step{{ID: "s", Title: "S"}}}

// BenchmarkAgentStep is the executor's overhead per step (session, one turn, state
// and turn records) with a model that answers at once, against the bare ledger write
// of one turn.
func BenchmarkAgentStep(b *testing.B) {
	benchcmp.Against(b, "step",
		benchcmp.Case{Run: func(b *testing.B) {
			_, _, store := benchExecutor(b, nil)
			as := store.(ledger.AgentStore)
			ctx := context.Background()
			if err := as.CreateAgentSession(ctx, ledger.AgentSession{ID: "s", Task: "t", Status: "running"}); err != nil {
				b.Fatal(err)
			}
			n := 0
			for b.Loop() {
				n++
				if err := as.AppendAgentTurn(ctx, ledger.AgentTurn{Session: "s", StepID: "s", Turn: n, StartedAt: time.Now(), Request: json.RawMessage(`{}`), Response: json.RawMessage(`{}`)}); err != nil {
					b.Fatal(err)
				}
			}
		}},
		benchcmp.Case{Run: func(b *testing.B) {
			x, _, _ := benchExecutor(b, nil)
			for b.Loop() {
				if res, err := x.Run(context.Background(), "t", benchTask); err != nil || res.Status != StatusCompleted {
					b.Fatal(res, err)
				}
			}
		}})
}

// BenchmarkAgentToolDispatch is the cost per read-only tool call through the executor
// (validation, classification, the call's ledger record, the result back into the
// conversation), 100 calls in one answer so that the step around them is amortized,
// against calling the tool directly.
func BenchmarkAgentToolDispatch(b *testing.B) {
	const n = 100
	calls := func() []ToolCall {
		out := make([]ToolCall, n)
		for i := range out {
			out[i] = ToolCall{ID: fmt.Sprint(i), Name: "read_file", Arguments: `{"path":"in.txt"}`}
		}
		return out
	}
	benchcmp.Against(b, "call",
		benchcmp.Case{Per: n, Run: func(b *testing.B) {
			_, ws, _ := benchExecutor(b, nil)
			var read *hostfuncs.Tool
			for _, t := range ws.Tools() {
				if t.Name() == "Files.read" {
					read = t
				}
			}
			for b.Loop() {
				for range n {
					if _, err := hostfuncs.CallTool(context.Background(), read, json.RawMessage(`{"path":"in.txt"}`)); err != nil {
						b.Fatal(err)
					}
				}
			}
		}},
		benchcmp.Case{Per: n, Run: func(b *testing.B) {
			x, _, _ := benchExecutor(b, calls)
			for b.Loop() {
				if res, err := x.Run(context.Background(), "t", benchTask); err != nil || res.Status != StatusCompleted {
					b.Fatal(res, err)
				}
			}
		}})
}

// BenchmarkAgentDurableTurn is a turn with one file write through the effect path
// (turn record, call records, in-flight mutation, outcome) against the same write
// made directly.
func BenchmarkAgentDurableTurn(b *testing.B) {
	write := func() []ToolCall {
		return []ToolCall{{ID: "w", Name: "write_file", Arguments: `{"path":"out.txt","content":"hello"}`}}
	}
	benchcmp.Against(b, "turn",
		benchcmp.Case{Run: func(b *testing.B) {
			_, ws, _ := benchExecutor(b, nil)
			for b.Loop() {
				if err := ws.Write("bench", "out.txt", []byte("hello")); err != nil {
					b.Fatal(err)
				}
			}
		}},
		benchcmp.Case{Run: func(b *testing.B) {
			x, _, _ := benchExecutor(b, write)
			for b.Loop() {
				if res, err := x.Run(context.Background(), "t", benchTask); err != nil || res.Status != StatusCompleted {
					b.Fatal(res, err)
				}
			}
		}})
}
