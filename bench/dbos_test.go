package bench

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // registers modernc.org/sqlite as "sqlite"

	"github.com/scripthost/scripthost/internal/benchcmp"
	"github.com/scripthost/scripthost/internal/benchrun"
	"github.com/scripthost/scripthost/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m, benchrun.RemoveWorkspaces) }

// BenchmarkDBOS compares scripthost's end-to-end consumer run (prepare, a durable
// mutation, next, commit) with DBOS Transact's one-step workflow, both on a SQLite file
// in WAL mode with synchronous=FULL, sequentially and with 16 workflows running at
// once. Neither side's step does I/O of its own: DBOS's returns its input with a
// suffix, scripthost's mutation calls a Go tool that adds to a counter. DBOS records a
// step after it ran; scripthost records the mutation before it runs and its outcome
// after, and runs three sandboxed phases.
func BenchmarkDBOS(b *testing.B) { dbosAgainst(b, false) }

// BenchmarkDBOSCommand is BenchmarkDBOS in a process set up as the scripthost command
// runs (hostproc.Tune: GOGC=400, one P above Go's default), for DBOS as for scripthost.
func BenchmarkDBOSCommand(b *testing.B) { dbosAgainst(b, true) }

func dbosAgainst(b *testing.B, command bool) {
	for _, workflows := range []int{1, 16} {
		b.Run(fmt.Sprintf("workflows=%d", workflows), func(b *testing.B) {
			ref := benchcmp.Case{Run: func(b *testing.B) { dbosRuns(b, workflows) }}
			run := benchcmp.Case{Run: func(b *testing.B) { benchrun.ConsumerRuns(b, workflows, benchrun.Count) }}
			if command {
				ref, run = benchcmp.AsCommand(ref), benchcmp.AsCommand(run)
			}
			benchcmp.Against(b, "run", ref, run)
		})
	}
}

// BenchmarkDBOSPostgres is BenchmarkDBOS on PostgreSQL: DBOS's system database and
// scripthost's ledger each a fresh database of the same server (pgtest's throwaway one,
// fsync on, synchronous_commit on), sequentially and with 16 workflows at once. Both
// sides report what the server counted for them with one meter (pgtest.Meter):
// statements, write transactions and server CPU per run.
func BenchmarkDBOSPostgres(b *testing.B) { dbosPostgresAgainst(b, false) }

// BenchmarkDBOSPostgresCommand is BenchmarkDBOSPostgres in a process set up as the
// scripthost command runs (hostproc.Tune), for DBOS as for scripthost.
func BenchmarkDBOSPostgresCommand(b *testing.B) { dbosPostgresAgainst(b, true) }

func dbosPostgresAgainst(b *testing.B, command bool) {
	for _, workflows := range []int{1, 16} {
		b.Run(fmt.Sprintf("workflows=%d", workflows), func(b *testing.B) {
			ref := benchcmp.Case{Run: func(b *testing.B) { dbosPostgresRuns(b, workflows) }}
			run := benchcmp.Case{Run: func(b *testing.B) {
				benchrun.ConsumerRunsOn(b, workflows, benchrun.Count, benchrun.Ledger{PostgresURL: pgtest.URL(b)})
			}}
			if command {
				ref, run = benchcmp.AsCommand(ref), benchcmp.AsCommand(run)
			}
			benchcmp.Against(b, "run", ref, run)
		})
	}
}

// oneStep is the benchmarked DBOS workflow: one step, checkpointed.
func oneStep(ctx dbos.Context, in string) (string, error) {
	return dbos.RunAsStep(ctx, func(context.Context) (string, error) { return in + "!", nil }, dbos.WithStepName("step"))
}

// dbosRuns runs b.N one-step workflows on goroutines goroutines, each waiting for its
// workflow's result before starting the next.
func dbosRuns(b *testing.B, goroutines int) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "dbos.db")+
		"?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(8) // as DBOS sets its own SQLite pool
	var mode, syncMode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil {
		b.Fatal(err)
	}
	if mode != "wal" || syncMode != "2" {
		b.Fatalf("DBOS database runs journal_mode=%s synchronous=%s, want wal and 2 (FULL)", mode, syncMode)
	}
	runDBOS(b, dbos.Config{AppName: "bench", SQLiteSystemDB: db}, goroutines, "")
}

// dbosPostgresRuns is dbosRuns with the system database a fresh PostgreSQL database.
func dbosPostgresRuns(b *testing.B, goroutines int) {
	url := pgtest.URL(b)
	runDBOS(b, dbos.Config{AppName: "bench", DatabaseURL: url}, goroutines, url)
}

// runDBOS launches DBOS with cfg and runs b.N one-step workflows on goroutines
// goroutines; meterURL, when set, is the PostgreSQL database whose work is counted,
// after as many untimed runs as the scripthost side makes there (benchrun.WarmRuns).
func runDBOS(b *testing.B, cfg dbos.Config, goroutines int, meterURL string) {
	ctx := context.Background()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	dctx, err := dbos.NewContext(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	dbos.RegisterWorkflow(dctx, oneStep)
	if err := dbos.Launch(dctx); err != nil {
		b.Fatal(err)
	}
	defer dbos.Shutdown(dctx, 10*time.Second)

	cold := 0.0 // the untimed runs' rate, reported after the timer's reset
	if meterURL != "" {
		warm := benchrun.WarmRuns(goroutines)
		start := time.Now()
		if err := dbosWorkflows(dctx, goroutines, b.N+1, b.N+warm); err != nil {
			b.Fatal(err)
		}
		cold = float64(warm) / time.Since(start).Seconds()
	}
	var meter *pgtest.Meter
	if meterURL != "" {
		meter = pgtest.StartMeter(b, meterURL)
	}
	cpu0 := benchcmp.CPUTime()
	b.ResetTimer()
	start := time.Now()
	err = dbosWorkflows(dctx, goroutines, 1, b.N)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	if cold > 0 {
		b.ReportMetric(cold, "cold-runs/s")
	}
	benchcmp.ReportCPU(b, cpu0, "run")
	if meter != nil {
		meter.Stop(b).Report(b, b.N, "run")
	}
}

// dbosWorkflows runs the one-step workflows numbered from to last on goroutines
// goroutines, each waiting for its workflow's result before starting the next, and
// returns the first error.
func dbosWorkflows(dctx dbos.Context, goroutines, from, last int) error {
	next := atomic.Int64{}
	next.Store(int64(from - 1))
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(last) {
					return
				}
				h, err := dbos.RunWorkflow(dctx, oneStep, fmt.Sprint(i))
				if err == nil {
					var out string
					out, err = h.GetResult()
					if err == nil && out != fmt.Sprint(i)+"!" {
						err = fmt.Errorf("workflow %d returned %q", i, out)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
