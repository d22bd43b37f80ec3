package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost/fixture"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/httptool"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/sqlite"
	"github.com/scripthost/scripthost/sandbox"
)

func init() { commands = append(commands, newTestCmd) }

type testFlags struct {
	fixtures string
	update   bool
	tools    string
	timeout  time.Duration
	replay   replayFlags
}

func newTestCmd(g *globals) *cobra.Command {
	var f testFlags
	cmd := &cobra.Command{
		Use:   "test WORKFLOW",
		Short: "Run a workflow against its fixtures, with recorded tool responses",
		Long: `Run the workflow (.js, .ts or .wasm) once per fixture file, each time on a fresh
ledger, with a fixed clock and seeded randomness, answering every tool call from the
fixture's recorded responses, and compare what it did (mutations, published events,
final state, run statuses, console output) with the fixture's expectations.

Fixtures are read from --fixtures (a file or a directory), by default the fixtures/
directory beside the workflow. The report is the same bytes on every run. The exit
code is 0 when every fixture passes and 1 otherwise.

With --update, the expect section of each fixture that differs is rewritten with what
the run did (the rest of the file is kept); check the diff before committing it.
See docs/testing.md for the fixture format.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if replay, err := replayAsked(cmd); replay || err != nil {
				if err != nil {
					return err
				}
				return replayWorkflow(cmd.Context(), g, f, args[0])
			}
			return testWorkflow(cmd.Context(), g, f, args[0])
		},
	}
	addReplayFlags(cmd, &f.replay)
	cmd.Flags().StringVar(&f.fixtures, "fixtures", "", "fixture file or directory (default: fixtures/ beside the workflow)")
	cmd.Flags().BoolVar(&f.update, "update", false, "rewrite the expectations of fixtures that differ with what the run did")
	cmd.Flags().StringVar(&f.tools, "tools", "", "HTTP tools declared in a JSON or YAML file (their schemas are used; the fixtures answer them)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "wall-clock limit of one handler invocation (default 5s)")
	return cmd
}

// testFailed is the exit of a test command whose fixtures did not all pass.
type testFailed struct{ failed, total int }

func (e testFailed) Error() string {
	return fmt.Sprintf("%d of %d fixtures failed", e.failed, e.total)
}

func (e testFailed) ExitCode() int { return 1 }

// openFixtureStore opens each fixture's ledger: a SQLite file with the fixture's
// clock and counter ids.
func openFixtureStore(ctx context.Context, path string, clock func() time.Time, newID func() string) (ledger.Store, error) {
	return sqlite.Open(ctx, path, sqlite.Options{Clock: clock, NewID: newID})
}

// fixtureEnv stands in for the environment when HTTP tools are declared for a test:
// no real credential is read, and none is needed since no request is sent.
func fixtureEnv(name string) (string, bool) { return "fixture-" + name, true }

func testWorkflow(ctx context.Context, g *globals, f testFlags, path string) error {
	if _, err := os.Stat(path); err != nil {
		return usagef("workflow %s: %v", path, errors.Unwrap(err))
	}
	if _, err := langOf(path); err != nil {
		return usageError{err: err}
	}
	dir := f.fixtures
	if dir == "" {
		dir = filepath.Join(filepath.Dir(path), "fixtures")
	}
	files, err := fixture.Load(dir)
	if err != nil {
		return usageError{err: err}
	}
	r, err := newFixtureRunner(f, 0)
	if err != nil {
		return err
	}
	defer r.Close(context.WithoutCancel(ctx))
	results := make([]*fixture.Result, 0, len(files))
	for _, file := range files {
		res := fixture.Check(ctx, r, path, file, f.update)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		results = append(results, res)
	}
	if failed := fixture.Report(g.Stdout, filepath.ToSlash(path), results); failed > 0 {
		return testFailed{failed: failed, total: len(results)}
	}
	return nil
}

// newFixtureRunner is the runner of test's fixtures and replays: the tools of --tools
// (their schemas; fixtures and recordings answer them), the handler timeout, and
// settle, how long a replayed run may wait for its retries (0: the runner's default).
func newFixtureRunner(f testFlags, settle time.Duration) (*fixture.Runner, error) {
	var tools []*hostfuncs.Tool
	if f.tools != "" {
		var err error
		if tools, err = httptool.Load(f.tools, fixtureEnv); err != nil {
			return nil, usageError{err: err}
		}
	}
	return fixture.NewRunner(fixture.Options{
		OpenStore: openFixtureStore,
		Tools:     tools,
		Limits:    sandbox.Limits{Timeout: f.timeout},
		Settle:    settle,
	})
}
