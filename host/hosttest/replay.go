package hosttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/scripthost/scripthost/fixture"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

// ReplayOptions select the recorded runs to replay and configure their runs.
type ReplayOptions struct {
	Options
	// Workflow names the recorded workflow; empty means the one the ledger stores the
	// workflow file under (fixture.RecordedName).
	Workflow string
	// Since keeps the runs created at or after it; zero keeps all.
	Since time.Time
}

// CheckReplay re-runs every finished run recorded in the SQLite ledger at ledgerPath
// (read through a copy, never written; its host ran with RecordCalls) against the
// workflow at path, the current code, and returns each run's verdict and the report
// `scripthost test --replay` would print. Update in opts is ignored.
func CheckReplay(ctx context.Context, path, ledgerPath string, opts ReplayOptions) ([]*fixture.Replayed, string, error) {
	dir, err := os.MkdirTemp("", "scripthost-replay-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.OpenSnapshot(ctx, ledgerPath, dir, sqlite.Options{})
	if err != nil {
		return nil, "", err
	}
	defer st.Close()
	r, err := newRunner(opts.Options)
	if err != nil {
		return nil, "", err
	}
	defer r.Close(context.WithoutCancel(ctx))
	name, results, err := r.ReplayRecorded(ctx, st, path, fixture.RecordFilter{Workflow: opts.Workflow, Since: opts.Since})
	var none *fixture.NoRecordingsError
	if errors.As(err, &none) {
		return nil, "", fmt.Errorf("hosttest: %v in %s", none, ledgerPath)
	}
	if err != nil {
		return nil, "", fmt.Errorf("hosttest: %w", err)
	}
	var b bytes.Buffer
	fixture.ReportReplay(&b, name, results)
	return results, b.String(), nil
}

// Replay replays the runs recorded in the ledger at ledgerPath against the workflow at
// path, each as a subtest of t named HANDLER/RUN, which fails with the run's first
// divergence.
func Replay(t *testing.T, path, ledgerPath string, opts ReplayOptions) {
	t.Helper()
	results, _, err := CheckReplay(t.Context(), path, ledgerPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		run := res.Recording.Run
		t.Run(run.Handler+"/"+run.ID, func(t *testing.T) {
			if res.Diverged != nil {
				t.Errorf("run %s diverged: %v", run.ID, res.Diverged)
			}
		})
	}
}
