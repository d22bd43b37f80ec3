package hostfuncs_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/sandbox"
)

// Every refused call is kept with its tool, phase, reason and the caller's location
// (from sandbox.Caller), and the error the script sees carries the location too.
func TestRefusalsAreRecordedWithTheirLocation(t *testing.T) {
	reg := hostfuncs.NewRegistry()
	send := okTool("Mail", "send", "")
	send.InputSchema = json.RawMessage(`{"type": "object", "required": ["to"]}`)
	mustRegister(t, reg, send)
	w := hostfuncs.NewToolWrapper(reg, nil, hostfuncs.RunInfo{RunID: "r1"}, hostfuncs.WrapperOptions{})
	line := 0
	ctx := sandbox.WithCaller(context.Background(), func() sandbox.Location {
		line++
		return sandbox.Location{File: "wf.js", Line: line, Column: 3}
	})
	w.SetPhase(scripthost.PhasePrepare)
	if _, err := w.Call(ctx, "Mail", "send", json.RawMessage(`{"to": "a"}`)); err == nil {
		t.Fatal("a mutation in prepare: got no error")
	}
	if _, err := w.Call(ctx, "Mail", "sned", nil); err == nil {
		t.Fatal("an unknown tool: got no error")
	}
	_, err := w.Call(ctx, "Mail", "send", json.RawMessage(`{}`))
	var se *scripthost.Error
	if !errors.As(err, &se) || se.File != "wf.js" || se.Line != 3 {
		t.Errorf("invalid input: got %v, want an error located at wf.js:3", err)
	}
	got := w.TakeRefusals()
	want := []struct{ tool, reason string }{
		{"Mail.send", hostfuncs.RefusedPhase}, {"Mail.sned", hostfuncs.RefusedUnknownTool}, {"Mail.send", hostfuncs.RefusedInvalidInput},
	}
	if len(got) != len(want) {
		t.Fatalf("refusals: got %+v, want %d", got, len(want))
	}
	for i, r := range got {
		if r.Tool != want[i].tool || r.Reason != want[i].reason || r.Phase != scripthost.PhasePrepare ||
			r.Where.String() != "wf.js:"+string(rune('1'+i))+":3" {
			t.Errorf("refusals[%d]: got %+v, want %s %s in prepare at wf.js:%d:3", i, r, want[i].tool, want[i].reason, i+1)
		}
	}
	if again := w.TakeRefusals(); len(again) != 0 {
		t.Errorf("TakeRefusals twice: got %+v the second time, want none", again)
	}
	ev := hostfuncs.RefusalEvent("r1", "h", got[0])
	var d map[string]any
	if err := json.Unmarshal(ev.Data, &d); err != nil || d["reason"] != "phase" || d["line"] != float64(1) || d["file"] != "wf.js" {
		t.Errorf("RefusalEvent data: got %s (%v)", ev.Data, err)
	}
}
