package sqlstore

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
)

// snapshotSteps are the states of a run, one after the other, that between them set,
// change and empty every field of scripthost.Run.
func snapshotSteps() []scripthost.Run {
	t0 := time.Unix(0, 1_700_000_000_123_456_789).UTC()
	r := scripthost.Run{ID: "r1", Workflow: "wf", Version: 1, Handler: "h", Kind: scripthost.KindConsumer,
		Phase: scripthost.RunPending, Status: scripthost.StatusActive, Attempt: 1,
		InputState: json.RawMessage(`{"n":1}`), CreatedAt: t0, UpdatedAt: t0}
	var steps []scripthost.Run
	step := func(f func(r *scripthost.Run)) {
		f(&r)
		steps = append(steps, r)
	}
	step(func(r *scripthost.Run) {})
	step(func(r *scripthost.Run) { r.Phase, r.UpdatedAt = scripthost.RunPreparing, t0.Add(time.Millisecond) })
	step(func(r *scripthost.Run) {}) // nothing changed: a change of nothing
	step(func(r *scripthost.Run) {
		r.Phase, r.Prepared = scripthost.RunPrepared, json.RawMessage(`{"order":7}`)
		r.Reservations = []scripthost.Reservation{{Topic: "in", IDs: []string{"e1", "e2"}}}
		r.WakeAt = t0.Add(time.Hour)
	})
	step(func(r *scripthost.Run) {
		r.Phase, r.Outcome = scripthost.RunMutated, &scripthost.Outcome{Status: "failed", Result: json.RawMessage(`{"x":1}`),
			Error: &scripthost.OutcomeError{Class: scripthost.ClassLogic, Code: "c", Message: "m"}}
	})
	step(func(r *scripthost.Run) {
		r.Status, r.Error, r.ErrorClass = scripthost.StatusPausedTransient, "timeout", scripthost.ClassNetwork
		r.NotBefore = t0.Add(time.Minute).In(time.FixedZone("x", 3600)) // another zone: other JSON, same instant
	})
	step(func(r *scripthost.Run) { r.NotBefore = t0.Add(time.Minute) }) // the same instant in UTC
	step(func(r *scripthost.Run) { r.SupersededBy = "r9" })
	step(func(r *scripthost.Run) {
		r.Status, r.Error, r.ErrorClass, r.NotBefore = scripthost.StatusActive, "", "", time.Time{}
		r.SupersededBy = ""
		r.Outcome.Error = nil
		r.RetryFromEmitting, r.RetryOf, r.Attempt, r.Version = true, "r0", 2, 3
		r.InputState = json.RawMessage(`null`)
	})
	step(func(r *scripthost.Run) {
		r.Phase, r.OutputState, r.RetryFromEmitting = scripthost.RunCommitted, json.RawMessage(`{"n":2}`), false
		r.Prepared, r.Reservations, r.Outcome, r.WakeAt, r.InputState = nil, nil, nil, time.Time{}, nil
		r.Workflow, r.Handler, r.Kind = "wf2", "h2", scripthost.KindProducer
		r.CreatedAt = t0.Add(-time.Second)
	})
	return steps
}

// TestSnapshotChanges logs the states of snapshotSteps as a run's snapshots, each as a
// change from the one before (the first whole), and reads them back: each is the JSON
// of the state it was taken of, byte for byte. Between them the changes name every
// field of the run, so a field added to scripthost.Run without the steps covering it
// fails here.
func TestSnapshotChanges(t *testing.T) {
	steps := snapshotSteps()
	var log snapshotLog
	named := map[string]bool{}
	var prev *scripthost.Run
	for i := range steps {
		entry, err := encodeSnapshot(prev, &steps[i])
		if err != nil {
			t.Fatal(err)
		}
		if delta := bytes.HasPrefix(entry, deltaPrefix); delta != (i > 0) {
			t.Errorf("step %d: logged as a change: %v, want %v: %s", i, delta, i > 0, entry)
		}
		if i > 0 {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(entry, &fields); err != nil {
				t.Fatalf("step %d: %v: %s", i, err, entry)
			}
			var removed []string
			if err := json.Unmarshal(fields["~"], &removed); err != nil {
				t.Fatal(err)
			}
			for name := range fields {
				named[name] = true
			}
			for _, name := range removed {
				named[name] = true
			}
		}
		got, err := log.next(entry)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want, err := json.Marshal(steps[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("step %d: read back\n%s\nwant\n%s\n(logged %s)", i, got, want, entry)
		}
		prev = &steps[i]
	}
	if e, _ := encodeSnapshot(&steps[2], &steps[2]); string(e) != `{"~":[]}` {
		t.Errorf("a snapshot with nothing changed is logged as %s, want {\"~\":[]}", e)
	}
	// Another id is another run: its snapshot is whole.
	other := steps[1]
	other.ID = "r2"
	if e, _ := encodeSnapshot(&steps[1], &other); bytes.HasPrefix(e, deltaPrefix) {
		t.Errorf("the snapshot of another run is logged as a change: %s", e)
	} else {
		named["id"] = true
	}
	for _, f := range runFields {
		if !named[f.name] {
			t.Errorf("no step changes the run's field %q", f.name)
		}
	}
}

// TestSnapshotChangeWithoutBase: a log whose first entry is a change, which no store
// writes, is refused with an error rather than read as a run.
func TestSnapshotChangeWithoutBase(t *testing.T) {
	var log snapshotLog
	_, err := log.next([]byte(`{"~":[],"phase":"preparing"}`))
	if err == nil || !strings.Contains(err.Error(), "a change with no snapshot before it") {
		t.Fatalf("got %v, want a change with no snapshot before it", err)
	}
	if _, err := log.next([]byte(`{"id":`)); err == nil {
		t.Fatal("a truncated entry was read")
	}
}
