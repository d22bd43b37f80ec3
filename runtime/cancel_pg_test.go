package runtime_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/benchrun"
)

// TestConsumerRunReadsNoCancelRequest: consumer runs that make a mutation on a
// PostgreSQL ledger do not read their lifecycle log for a cancel request before their
// next phase: the write of the outcome honours one itself (ledger.Store.CancelRun).
// The server counts the statements (pg_stat_statements), so the test starts a server
// of its own.
func TestConsumerRunReadsNoCancelRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound, not a measure
	defer cancel()
	c0 := newCounted(ctx, t, "w0", benchrun.Source(benchrun.Count))
	st := c0.st
	names := []string{"w0"}
	const runs = 3
	if _, err := st.Publish(ctx, benchrun.Events(names, "e", runs)...); err != nil {
		t.Fatal(err)
	}
	c := c0.runMetered(ctx, t, names, runs)
	for _, sc := range c.ByStatement {
		if strings.Contains(sc.Query, "FROM lifecycle_events") {
			t.Errorf("the runs read their lifecycle log (%d times): %s", sc.Calls, sc.Query)
		}
	}
	t.Logf("%d statements for %d runs", c.Statements, runs)
}
