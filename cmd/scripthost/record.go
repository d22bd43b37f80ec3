package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/fixture"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
	"github.com/scripthost/scripthost/ledger/sqlite"
)

func init() { commands = append(commands, newFixtureCmd) }

// addRecordCallsFlag gives run and serve --record-calls.
func addRecordCallsFlag(cmd *cobra.Command, g *globals) {
	cmd.Flags().BoolVar(&g.recordCalls, "record-calls", false,
		"log every read tool call with its result in the ledger, so that runs can become fixtures (fixture record) and be replayed (test --replay)")
}

func newFixtureCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fixture",
		Short: "Make fixtures from what the ledger recorded",
	}
	cmd.AddCommand(newFixtureRecordCmd(g))
	return cmd
}

type recordFlags struct {
	out, workflow, since string
}

func newFixtureRecordCmd(g *globals) *cobra.Command {
	var f recordFlags
	cmd := &cobra.Command{
		Use:   "record [RUN...] [--workflow W [--since T]]",
		Short: "Turn recorded runs into a fixture that `scripthost test` passes",
		Long: `Read runs from the ledger (--db) and write a fixture that reproduces them: the
events they consumed and the handlers' state before them as the starting point, their
tool calls with the recorded results as responses, and what they did (mutations,
published events, final state, run statuses) as expectations. The clock is the first
run's start. The fixture is then run against the workflow's source as the ledger stored
it (the code that made the runs): the command fails when it does not reproduce them,
and the runs of handlers that were not recorded but that the runs' events woke are
added to the expectations.

Without RUN, --workflow W records every finished run of W (--since T: those created
since T). Runs of one workflow go into one fixture, written to stdout or to -o FILE.json. With
-o DIR (an existing directory, or a path ending in /), each run gets a fixture of its
own, DIR/HANDLER-RUN.json: use it for runs that are not consecutive, or whose calls got
different answers.

Read calls are in the ledger only when the host ran with --record-calls. Redacted values
stay redacted: a call whose recorded input holds [REDACTED] is matched on its other
fields. The ledger is read through a copy and never written.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return recordFixture(cmd.Context(), g, f, args)
		},
	}
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "fixture file (.json), or a directory for one fixture per run (default: stdout)")
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "without RUN: record every finished run of this workflow")
	cmd.Flags().StringVar(&f.since, "since", "", "with --workflow: only runs created at or after this time (RFC 3339), or this long ago (24h)")
	return cmd
}

// openRecorded opens a ledger to read recorded runs from, never writing to it: an
// SQLite file through a copy in a temporary directory, a postgres:// URL as the
// operator commands open it. close releases it.
func openRecorded(ctx context.Context, target string) (_ ledger.Store, close func(), err error) {
	if target == "" {
		return nil, nil, usagef("no ledger given")
	}
	if postgres.IsURL(target) {
		st, err := postgres.Open(ctx, target, postgres.Options{})
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
	if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w at %s: no such ledger file", errNoLedger, target)
	}
	dir, err := os.MkdirTemp("", "scripthost-replay-")
	if err != nil {
		return nil, nil, err
	}
	st, err := sqlite.OpenSnapshot(ctx, target, dir, sqlite.Options{})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return st, func() { st.Close(); os.RemoveAll(dir) }, nil
}

func recordFixture(ctx context.Context, g *globals, f recordFlags, ids []string) error {
	if len(ids) == 0 && f.workflow == "" {
		return usagef("fixture record: name runs, or --workflow to record every finished run of a workflow")
	}
	since, err := parseSince(f.since, time.Now())
	if err != nil {
		return err
	}
	out := f.out
	if out != "" && !strings.HasSuffix(out, "/") && !isDir(out) && !strings.EqualFold(filepath.Ext(out), ".json") {
		return usagef("-o %s: write the fixture to a .json file, or give a directory", out)
	}
	st, done, err := openRecorded(ctx, g.DBPath)
	if err != nil {
		return err
	}
	defer done()
	recs, err := loadRecordings(ctx, st, f.workflow, since, ids)
	if err != nil {
		return err
	}
	r, err := fixture.NewRunner(fixture.Options{OpenStore: openFixtureStore, Settle: replayTimeout})
	if err != nil {
		return err
	}
	defer r.Close(context.WithoutCancel(ctx))
	if out != "" && (strings.HasSuffix(out, "/") || isDir(out)) {
		return recordEach(ctx, g, r, st, out, recs)
	}
	raw, err := recordOne(ctx, g, r, st, recs)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = g.Stdout.Write(raw)
		return err
	}
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(g.Stdout, "wrote %s (%d runs of workflow %s)\n", out, len(recs), recs[0].Run.Workflow)
	return nil
}

// loadRecordings reads the runs named by ids, or without ids every finished run of
// workflow created at or after since.
func loadRecordings(ctx context.Context, st ledger.Store, workflow string, since time.Time, ids []string) ([]*fixture.Recording, error) {
	if len(ids) == 0 {
		recs, err := fixture.Recordings(ctx, st, fixture.RecordFilter{Workflow: workflow, Since: since})
		if err == nil && len(recs) == 0 {
			err = usagef("no finished runs of workflow %s to record", workflow)
		}
		return recs, err
	}
	recs := make([]*fixture.Recording, 0, len(ids))
	for _, id := range ids {
		rec, err := fixture.LoadRecording(ctx, st, id)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// recordOne builds the fixture of recs, completed by running it against the workflow
// version the newest of them ran (fixture.Runner.Complete).
func recordOne(ctx context.Context, g *globals, r *fixture.Runner, st ledger.Store, recs []*fixture.Recording) ([]byte, error) {
	fx, notes, err := fixture.Record(recs)
	if err != nil {
		return nil, usageError{err: err}
	}
	newest := recs[0]
	for _, rec := range recs {
		if rec.Run.Version > newest.Run.Version {
			newest = rec
		}
	}
	src, cleanup, err := storedSource(ctx, st, newest.Run)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := r.Complete(ctx, src, fx); err != nil {
		return nil, err
	}
	printNotes(g, notes)
	return fixture.MarshalRecorded(fx)
}

// storedSource writes the source of the workflow version run executed, as the ledger
// stores it, to a temporary file named like its origin.
func storedSource(ctx context.Context, st ledger.Store, run scripthost.Run) (string, func(), error) {
	v, err := st.WorkflowVersion(ctx, run.Workflow, run.Version)
	if err != nil {
		return "", nil, fmt.Errorf("workflow %s version %d: %w", run.Workflow, run.Version, err)
	}
	dir, err := os.MkdirTemp("", "scripthost-record-")
	if err != nil {
		return "", nil, err
	}
	name := filepath.Base(v.Path)
	if v.Path == "" || filepath.Ext(name) != "."+v.Language {
		name = run.Workflow + "." + v.Language
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, v.Source, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// recordEach writes one fixture per run into dir.
func recordEach(ctx context.Context, g *globals, r *fixture.Runner, st ledger.Store, dir string, recs []*fixture.Recording) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, rec := range recs {
		raw, err := recordOne(ctx, g, r, st, []*fixture.Recording{rec})
		if err != nil {
			return fmt.Errorf("run %s: %w", rec.Run.ID, err)
		}
		path := filepath.Join(dir, rec.Run.Handler+"-"+rec.Run.ID+".json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(g.Stdout, "wrote %s (run %s of workflow %s)\n", path, rec.Run.ID, rec.Run.Workflow)
	}
	return nil
}

func printNotes(g *globals, notes []string) {
	for _, n := range notes {
		fmt.Fprintln(g.Stderr, "note: "+n)
	}
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// replayFlags are test's flags for --replay.
type replayFlags struct {
	ledger   string
	workflow string
	since    string
}

func addReplayFlags(cmd *cobra.Command, f *replayFlags) {
	cmd.Use = "test WORKFLOW [--replay LEDGER]"
	cmd.Long += `

With --replay LEDGER (an SQLite ledger file, read through a copy and never written, or
a postgres:// URL), the fixtures are not used: every finished run of the workflow
recorded in that ledger (--workflow names another workflow, --since keeps the newer
runs) is run again against the workflow's current code, each on a fresh ledger seeded
from the run's recorded inputs, in deterministic mode, its tool calls answered with
the recorded results. Each run is reported ok or with its first divergence: a
different tool call or input, a call the recording does not have, a recorded call not
made, a different publish, status or final state, at the script's file:line where the
current code made the diverging call. The exit code is 1 when any run diverges. Read
calls are recorded only by a host run with --record-calls.`
	cmd.Flags().StringVar(&f.ledger, "replay", "", "re-run the runs recorded in this ledger against the current code instead of the fixtures")
	cmd.Flags().StringVar(&f.workflow, "workflow", "", "with --replay: the recorded workflow's name (default: the name the file's runs are stored under)")
	cmd.Flags().StringVar(&f.since, "since", "", "with --replay: only runs created at or after this time (RFC 3339), or this long ago (a duration: 24h)")
}

// replayAsked reports whether test was given --replay, refusing --workflow and
// --since without it.
func replayAsked(cmd *cobra.Command) (bool, error) {
	if cmd.Flags().Changed("replay") {
		return true, nil
	}
	for _, name := range []string{"workflow", "since"} {
		if cmd.Flags().Changed(name) {
			return false, usagef("--%s selects recorded runs: it goes with --replay LEDGER", name)
		}
	}
	return false, nil
}

// parseSince reads --since: an RFC 3339 time, a date, or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usagef("--since %s: give a positive duration", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("--since %q: want an RFC 3339 time (2026-01-02T15:04:05Z), a date or a duration (24h)", s)
}

// replayTimeout bounds one replayed run's fixture: a replay is one run and the
// handlers it wakes, so minutes mean a loop.
const replayTimeout = time.Minute

func replayWorkflow(ctx context.Context, g *globals, f testFlags, path string) error {
	if _, err := os.Stat(path); err != nil {
		return usagef("workflow %s: %v", path, errors.Unwrap(err))
	}
	if _, err := langOf(path); err != nil {
		return usageError{err: err}
	}
	if f.update || f.fixtures != "" {
		return usagef("--replay checks recorded runs, not fixtures: drop --fixtures and --update")
	}
	since, err := parseSince(f.replay.since, time.Now())
	if err != nil {
		return err
	}
	st, done, err := openRecorded(ctx, f.replay.ledger)
	if err != nil {
		return err
	}
	defer done()
	r, err := newFixtureRunner(f, replayTimeout)
	if err != nil {
		return err
	}
	defer r.Close(context.WithoutCancel(ctx))
	name, results, err := r.ReplayRecorded(ctx, st, path, fixture.RecordFilter{Workflow: f.replay.workflow, Since: since})
	var none *fixture.NoRecordingsError
	if errors.As(err, &none) {
		return usagef("%v in %s", none, f.replay.ledger)
	}
	if err != nil {
		return err
	}
	if diverged := fixture.ReportReplay(g.Stdout, name, results); diverged > 0 {
		return replayDiverged{diverged: diverged, total: len(results)}
	}
	return nil
}

// replayDiverged is the exit of a replay in which runs diverged.
type replayDiverged struct{ diverged, total int }

func (e replayDiverged) Error() string {
	return fmt.Sprintf("%d of %d replayed runs diverged", e.diverged, e.total)
}

func (e replayDiverged) ExitCode() int { return 1 }
