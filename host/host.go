// Package host is the embedding API: it wires a ledger, the script engines, the tool
// registry and the runtime together, so that a Go service can register its own tools
// and run workflows in a few lines. The CLI is built on it.
//
//	store, _ := sqlite.Open(ctx, "app.db", sqlite.Options{})
//	h, _ := host.New(ctx, store, host.Options{Workspace: "data"})
//	h.RegisterTool(&hostfuncs.Tool{Namespace: "Mail", Method: "send", Execute: send})
//	h.LoadWorkflow(ctx, "workflow.ts")
//	h.RunOnce(ctx)
//
// It is also the one place the concrete script engines and the built-in tools are
// put together: NewEngines and NewTools give them to what loads a workflow or offers
// tools without a whole Host (validation, the fixture runner, benchmarks, plans and
// agent sessions).
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/hostfuncs/codetool"
	"github.com/scripthost/scripthost/hostfuncs/command"
	"github.com/scripthost/scripthost/hostfuncs/workspace"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/sandbox"
)

// Options configure a Host. Zero fields take defaults.
type Options struct {
	// Workspace, when set, registers the Files.* and plan.file_* tools confined to
	// this directory, and the read-only code queries Code.symbols, Code.references
	// and Code.referencesFrom over its code index (codegraph.db in it, opened with the
	// "sqlite3" database/sql driver, which the program registers by importing
	// github.com/mattn/go-sqlite3 or ledger/sqlite).
	Workspace string
	// LedgerFiles are the ledger's files on disk (see LedgerFiles). New refuses a
	// Workspace that contains any of them (see CheckWorkspace). Nil takes the files of
	// the store's own file when it has one (a Path method, as ledger/sqlite's store
	// has); a store without files (PostgreSQL) has none to keep out.
	LedgerFiles []string
	// Commands, with a Workspace, registers plan.run_command allowing only these
	// programs (looked up in PATH now), run without a shell inside the workspace.
	Commands []command.Program
	// CommandOptions holds the rest of the command tool's configuration (timeouts,
	// output cap, Unsafe, Hide); its Workspace and Programs are set from above.
	CommandOptions command.Config
	// Limits bound every invocation (zero fields: sandbox.DefaultLimits).
	Limits sandbox.Limits
	// Clock defaults to time.Now.
	Clock func() time.Time
	// Deterministic fixes the clock, seed and time zone inside scripts (tests).
	Deterministic *sandbox.Determinism
	// Reconcile bounds reconcile attempts of uncertain mutations.
	Reconcile hostfuncs.ReconcilePolicy
	// WasmCacheDir holds compiled Wasm modules; empty uses the user cache directory.
	WasmCacheDir string
	Logger       *slog.Logger
	Redactor     *hostfuncs.Redactor
	// Failpoint is called at every phase boundary (crash tests).
	Failpoint func(name string)
	// OnConsole receives script console output.
	OnConsole func(run scripthost.Run, lines []sandbox.ConsoleLine)
	// Concurrency bounds the runs driven at once (0: runtime.DefaultConcurrency).
	Concurrency int
	// Lease names this host and sets its lease duration when the store is shared by
	// several hosts (PostgreSQL); see runtime.LeaseOptions.
	Lease runtime.LeaseOptions
	// Observer sees every run driven and phase invoked (metrics, traces).
	Observer runtime.Observer
	// RecordCalls logs every read tool call with its result, so that runs can be
	// turned into fixtures and replayed (see runtime.Config.RecordCalls).
	RecordCalls bool
}

// Host runs workflows against one ledger.
type Host struct {
	store     ledger.Store
	tools     *hostfuncs.Registry
	rt        *runtime.Runtime
	redactor  *hostfuncs.Redactor
	workflows []string
	engines   *Engines
	ws        *workspace.Workspace // nil without Options.Workspace
	code      *codetool.Tools      // nil without Options.Workspace
}

// New builds a Host on store. The caller keeps ownership of the store.
func New(ctx context.Context, store ledger.Store, opts Options) (*Host, error) {
	if store == nil {
		return nil, errors.New("host: no ledger store")
	}
	h := &Host{store: store, tools: hostfuncs.NewRegistry(), redactor: opts.Redactor}
	if h.redactor == nil {
		h.redactor = hostfuncs.NewRedactor()
	}
	if err := h.build(ctx, opts); err != nil {
		// Whatever was opened before the failure is released.
		_ = h.Close(ctx)
		return nil, err
	}
	return h, nil
}

func (h *Host) build(ctx context.Context, opts Options) error {
	if opts.Workspace != "" {
		if err := CheckWorkspace(opts.Workspace, ledgerFilesOf(opts, h.store)); err != nil {
			return err
		}
		ws, err := workspace.New(opts.Workspace)
		if err != nil {
			return fmt.Errorf("host: workspace: %w", err)
		}
		h.ws = ws
		to := ToolOptions{Workspace: ws}
		if len(opts.Commands) > 0 {
			cfg := opts.CommandOptions
			cfg.Programs = opts.Commands
			to.Commands = &cfg
		}
		tools, err := NewTools(to)
		if err != nil {
			return err
		}
		h.tools, h.code = tools.Registry, tools.Code
	} else if len(opts.Commands) > 0 {
		return errors.New("host: Commands need a Workspace to run in")
	}
	// Wasm guests see the real clock, as scripts do; deterministic mode fixes both.
	h.engines = NewEngines(EngineOptions{WasmCacheDir: opts.WasmCacheDir})
	engines, err := h.engines.For(ctx, "js", "ts", "wasm")
	if err != nil {
		return err
	}
	h.rt, err = runtime.New(runtime.Config{
		Store:         h.store,
		Engines:       engines,
		Tools:         h.tools,
		Clock:         opts.Clock,
		Limits:        opts.Limits,
		Deterministic: opts.Deterministic,
		Reconcile:     opts.Reconcile,
		Redactor:      h.redactor,
		Logger:        opts.Logger,
		Failpoint:     opts.Failpoint,
		OnConsole:     opts.OnConsole,
		Concurrency:   opts.Concurrency,
		Lease:         opts.Lease,
		Observer:      opts.Observer,
		RecordCalls:   opts.RecordCalls,
	})
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	return nil
}

// RegisterTool adds tools scripts can call.
func (h *Host) RegisterTool(tools ...*hostfuncs.Tool) error { return h.tools.Register(tools...) }

// Tools returns the registry (the whitelist of callable tools).
func (h *Host) Tools() *hostfuncs.Registry { return h.tools }

// Redactor returns the host's redactor; register secret values with it.
func (h *Host) Redactor() *hostfuncs.Redactor { return h.redactor }

// Runtime returns the runtime, for callers that drive runs themselves.
func (h *Host) Runtime() *runtime.Runtime { return h.rt }

// Store returns the ledger.
func (h *Host) Store() ledger.Store { return h.store }

// LoadWorkflow reads, validates and stores a workflow file, and adds it to the
// workflows Run and RunOnce drive. Its name is the definition's name: or, without one,
// the name derived from its absolute path (see runtime.WorkflowName). A name belongs to
// one file: another file claiming it is refused (see LoadOptions.Replace). An invalid
// workflow writes nothing.
func (h *Host) LoadWorkflow(ctx context.Context, path string) (ledger.WorkflowVersion, error) {
	return h.Load(ctx, path, LoadOptions{})
}

// LoadWorkflowAs is LoadWorkflow with an explicit name.
func (h *Host) LoadWorkflowAs(ctx context.Context, name, path string) (ledger.WorkflowVersion, error) {
	return h.Load(ctx, path, LoadOptions{Name: name})
}

// LoadOptions adjust how Load names a workflow.
type LoadOptions struct {
	// Name overrides the definition's name and the one derived from the path.
	Name string
	// Replace moves the name to this file when another file holds it.
	Replace bool
}

// Load is LoadWorkflow with options.
func (h *Host) Load(ctx context.Context, path string, opts LoadOptions) (ledger.WorkflowVersion, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return ledger.WorkflowVersion{}, fmt.Errorf("host: %w", err)
	}
	v, err := h.rt.Load(ctx, runtime.WorkflowFile{Path: path, Source: src, Name: opts.Name, Replace: opts.Replace})
	if err != nil {
		return v, err
	}
	if !slices.Contains(h.workflows, v.Workflow) {
		h.workflows = append(h.workflows, v.Workflow)
	}
	return v, nil
}

// Workflows names the workflows loaded into this host.
func (h *Host) Workflows() []string { return append([]string(nil), h.workflows...) }

// Publish stores events from outside any run and wakes their workflows at once, so
// that Run does not wait for its next poll to see them.
func (h *Host) Publish(ctx context.Context, events ...ledger.NewEvent) ([]scripthost.Event, error) {
	return h.rt.Publish(ctx, events...)
}

// RunOnce runs the loaded workflows until no work is left.
func (h *Host) RunOnce(ctx context.Context) error { return h.rt.RunOnce(ctx, h.workflows) }

// RunOnceUntil is RunOnce that stops starting work once stop is closed and returns when
// the pass under way is done (see runtime.Runtime.RunOnceUntil).
func (h *Host) RunOnceUntil(ctx context.Context, stop <-chan struct{}) error {
	return h.rt.RunOnceUntil(ctx, stop, h.workflows)
}

// Outstanding reports what the loaded workflows left unfinished: handlers blocked
// until a person acts, runs the host picks up again by itself, and when.
func (h *Host) Outstanding(ctx context.Context) (runtime.Outstanding, error) {
	return h.rt.Outstanding(ctx, h.workflows)
}

// Run runs the loaded workflows until ctx is done.
func (h *Host) Run(ctx context.Context, poll time.Duration) error {
	return h.rt.Run(ctx, h.workflows, poll)
}

// RunUntil is Run that stops starting work once stop is closed and returns when the
// pass under way is done (see runtime.Runtime.RunUntil).
func (h *Host) RunUntil(ctx context.Context, stop <-chan struct{}, poll time.Duration) error {
	return h.rt.RunUntil(ctx, stop, h.workflows, poll)
}

// Close releases the engines and the workspace; it does not close the store.
func (h *Host) Close(ctx context.Context) error {
	var errs []error
	if h.rt != nil {
		errs = append(errs, h.rt.Close(ctx))
	}
	if h.engines != nil {
		errs = append(errs, h.engines.Close(ctx))
	}
	if h.code != nil {
		errs = append(errs, h.code.Close())
	}
	if h.ws != nil {
		if err := h.ws.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, fmt.Errorf("host: close workspace: %w", err))
		}
	}
	return errors.Join(errs...)
}
