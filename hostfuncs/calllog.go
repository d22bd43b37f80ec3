package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/ledger"
)

// noteRead logs a read's call for replay (ledger.EventToolCalled) when the run's
// context carries a ledger.CallLog: the input redacted as a mutation's params are,
// the result as the script received it, or the error's class, code and message.
// Topics.* calls are not logged: a replay answers them from its own ledger.
func (w *ToolWrapper) noteRead(ctx context.Context, t *Tool, phase scripthost.Phase, value any, secrets []string, out json.RawMessage, err error) {
	if w.info.RunID == "" || t.Namespace == "Topics" {
		return
	}
	d := map[string]any{"phase": phase.String(), "tool": t.Name()}
	in, cerr := storedParams(t, value, secrets, w.redactor, callRedactor(secrets))
	if cerr != nil {
		return
	}
	d["input"] = in
	if err != nil {
		e := map[string]any{"class": scripthost.ClassOf(err), "message": err.Error()}
		var se *scripthost.Error
		if errors.As(err, &se) && se.Code != "" {
			e["code"] = se.Code
		}
		d["error"] = e
	} else {
		d["result"] = out
	}
	ledger.NoteCall(ctx, ledger.NewLifecycleEvent(w.info.RunID, ledger.EventToolCalled, d))
}

// CallingRun returns the run and handler whose script made the tool call running with
// ctx (a tool's Execute receives such a context), and the phase it was made in.
func CallingRun(ctx context.Context) (runID, handler string, phase scripthost.Phase, ok bool) {
	w, ok := ctx.Value(wrapperKey{}).(*ToolWrapper)
	if !ok {
		return "", "", scripthost.PhaseNone, false
	}
	return w.info.RunID, w.info.Handler, w.Phase(), true
}
