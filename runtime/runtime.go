package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/sandbox"
)

// Config wires a Runtime. Store, Engines and Tools are required.
type Config struct {
	Store ledger.Store
	// Engines by language: "js", "ts", "wasm".
	Engines map[string]sandbox.Engine
	Tools   *hostfuncs.Registry
	// Clock defaults to time.Now.
	Clock  func() time.Time
	Limits sandbox.Limits
	// Deterministic, when set, fixes the clock, seed and time zone inside scripts.
	Deterministic *sandbox.Determinism
	Reconcile     hostfuncs.ReconcilePolicy
	Redactor      *hostfuncs.Redactor
	Logger        *slog.Logger
	// TransientRetries caps the automatic retries of runs paused by network errors
	// (default 5); TransientDelay is the first backoff (default 1s, doubling).
	TransientRetries int
	TransientDelay   time.Duration
	// Failpoint, when set, is called with a name at every phase boundary; crash tests
	// use it to kill the process at a chosen point.
	Failpoint func(name string)
	// OnConsole receives the console output of every invocation.
	OnConsole func(run scripthost.Run, lines []sandbox.ConsoleLine)
	// Concurrency bounds the runs driven at once across every workflow; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Lease applies when Store is shared by several hosts (a ledger.Leaser).
	Lease LeaseOptions
	// Observer, when set, sees every run driven and every phase invoked.
	Observer Observer
	// RecordCalls logs every read tool call of a run with its input and result
	// (ledger.EventToolCalled), so that the run can be turned into a fixture or
	// replayed against changed code (fixture.Record, fixture.Replay).
	RecordCalls bool
}

// DefaultConcurrency is the default bound on runs driven at once: a few per CPU, and
// at least 16, since a run spends much of its time waiting: for the writer, for the
// fsync its in-flight record waits for, for a tool.
func DefaultConcurrency() int { return max(16, 4*goruntime.GOMAXPROCS(0)) }

// Runtime drives runs. It is safe for concurrent use; the scheduler runs one session
// per workflow at a time.
type Runtime struct {
	cfg Config
	// leaser is the store's lease API when several hosts share it, else nil.
	leaser ledger.Leaser

	mu       sync.Mutex
	programs map[string]*loaded     // by source hash
	versions map[string]*loaded     // by "workflow@version"
	idle     map[string]int64       // workflow/handler → newest pending seq when it last found nothing to do
	ahead    map[string]*aheadState // workflow → what its consumers read ahead (keptEvents)
	wfLocks  map[string]*sync.Mutex
	wake     map[string]chan struct{} // by workflow: new work for Run's loop
	slots    chan struct{}            // one token per run being driven (Concurrency)
	// yieldUntil: workflow → until when this host leaves its lease to another host.
	yieldUntil map[string]time.Time
	// held: workflow → the lease this host holds (see heldLease); claimLocks
	// serialise the host's claims of each.
	held       map[string]*heldLease
	claimLocks map[string]*sync.Mutex
	leaseless  time.Time // when the host last held no lease (leaselessSince)
	// asked is the workflow whose lease held elsewhere this host, holding none, last
	// asked for, at askedAt (see ask).
	asked   string
	askedAt time.Time
	// view is the ledger's leases as read at viewAt (leaseView).
	viewMu sync.Mutex
	view   map[string]ledger.Lease
	viewAt time.Time
}

type loaded struct {
	prog sandbox.Program
	def  *Definition
}

// New returns a Runtime for cfg.
func New(cfg Config) (*Runtime, error) {
	if cfg.Store == nil || cfg.Tools == nil || len(cfg.Engines) == 0 {
		return nil, errors.New("runtime: Config needs Store, Tools and at least one engine")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Redactor == nil {
		cfg.Redactor = hostfuncs.NewRedactor()
	}
	if cfg.TransientRetries == 0 {
		cfg.TransientRetries = 5
	}
	if cfg.TransientDelay == 0 {
		cfg.TransientDelay = time.Second
	}
	if cfg.Concurrency < 0 {
		return nil, fmt.Errorf("runtime: Concurrency is %d, want 0 (the default) or more", cfg.Concurrency)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency()
	}
	cfg.Lease = cfg.Lease.withDefaults()
	leaser, _ := cfg.Store.(ledger.Leaser)
	return &Runtime{
		cfg:      cfg,
		leaser:   leaser,
		programs: map[string]*loaded{},
		versions: map[string]*loaded{},
		idle:     map[string]int64{},
		ahead:    map[string]*aheadState{},
		wfLocks:  map[string]*sync.Mutex{},
		wake:     map[string]chan struct{}{},
		slots:    make(chan struct{}, cfg.Concurrency),

		yieldUntil: map[string]time.Time{},
		held:       map[string]*heldLease{},
		claimLocks: map[string]*sync.Mutex{},
		leaseless:  time.Now(),
	}, nil
}

// Store returns the ledger the runtime writes to.
func (rt *Runtime) Store() ledger.Store { return rt.cfg.Store }

// Language returns the language of a workflow file by its extension.
func Language(path string) (string, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".js", ".mjs", ".cjs":
		return "js", nil
	case ".ts", ".mts":
		return "ts", nil
	case ".wasm":
		return "wasm", nil
	}
	return "", fmt.Errorf("runtime: %s: unknown workflow language (want .js, .ts or .wasm)", path)
}

// WorkflowName derives a workflow's name from the absolute path of its file: the
// directory name for a file called workflow.*, the file name without extension
// otherwise. A relative path is made absolute first, so that one file has one name
// however it is spelled.
func WorkflowName(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	base := filepath.Base(path)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if stem == "workflow" {
		if dir := filepath.Base(filepath.Dir(path)); dir != "." && dir != "/" {
			return dir
		}
	}
	return stem
}

// Validate loads and validates a workflow without storing anything.
func (rt *Runtime) Validate(ctx context.Context, path string, source []byte) (*Definition, error) {
	lang, err := Language(path)
	if err != nil {
		return nil, err
	}
	code, _, err := rt.build(ctx, lang, path, source)
	if err != nil {
		return nil, err
	}
	l, err := rt.load(ctx, lang, path, code)
	if err != nil {
		return nil, err
	}
	return l.def, nil
}

// build returns what is stored for a workflow file of language lang, and the files it
// was built from: its engine gathers the modules and packages it imports when it can
// (sandbox.Builder). source is the file's text, read from path when nil.
func (rt *Runtime) build(ctx context.Context, lang, path string, source []byte) ([]byte, []ledger.SourceFile, error) {
	eng, ok := rt.cfg.Engines[lang]
	if !ok {
		return nil, nil, fmt.Errorf("runtime: %s: no engine for language %q", path, lang)
	}
	if source == nil {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("runtime: %w", err)
		}
		source = b
	}
	b, err := sandbox.Build(ctx, eng, path, source)
	if err != nil {
		return nil, nil, err
	}
	var manifest []ledger.SourceFile
	for _, f := range b.Files {
		manifest = append(manifest, ledger.SourceFile{Path: f.Path, SHA256: f.SHA256, Size: f.Size})
	}
	return b.Code, manifest, nil
}

// WorkflowFile is a workflow source to store.
type WorkflowFile struct {
	// Path is where the source comes from; it is made absolute and stored as the
	// workflow's origin.
	Path   string
	Source []byte
	// Name, when set, overrides the definition's name: and the name derived from the
	// path (see WorkflowName), in that order.
	Name string
	// Replace moves the name to this file when it belongs to another one.
	Replace bool
}

// LoadWorkflow validates a workflow's source and stores it as the workflow's newest
// version (unchanged source keeps its version). Nothing is written when it is invalid.
// An empty name takes the definition's name or the one derived from the path.
func (rt *Runtime) LoadWorkflow(ctx context.Context, name, path string, source []byte) (ledger.WorkflowVersion, error) {
	return rt.Load(ctx, WorkflowFile{Name: name, Path: path, Source: source})
}

// Load validates a workflow file and stores it as its workflow's newest version under
// its name: f.Name, the definition's name:, or the name derived from the absolute path.
// A name belongs to one file: another file claiming it is refused with an error naming
// both (a *scripthost.Error of code name_taken wrapping ledger.ErrOriginConflict)
// unless f.Replace is set.
func (rt *Runtime) Load(ctx context.Context, f WorkflowFile) (ledger.WorkflowVersion, error) {
	lang, err := Language(f.Path)
	if err != nil {
		return ledger.WorkflowVersion{}, err
	}
	if abs, err := filepath.Abs(f.Path); err == nil {
		f.Path = abs
	}
	code, manifest, err := rt.build(ctx, lang, f.Path, f.Source)
	if err != nil {
		return ledger.WorkflowVersion{}, err
	}
	l, err := rt.load(ctx, lang, f.Path, code)
	if err != nil {
		return ledger.WorkflowVersion{}, err
	}
	name := f.Name
	switch {
	case name != "":
		if err := CheckName(name); err != nil {
			return ledger.WorkflowVersion{}, scripthost.Errorf(scripthost.ClassLogic, scripthost.CodeInvalidWorkflow, "%v", err)
		}
	case l.def.Name != "":
		name = l.def.Name
	default:
		name = WorkflowName(f.Path)
	}
	def, err := l.prog.Definition(ctx)
	if err != nil {
		return ledger.WorkflowVersion{}, err
	}
	v, err := rt.cfg.Store.PutWorkflow(ctx, ledger.WorkflowVersion{
		Workflow:   name,
		Language:   lang,
		Path:       f.Path,
		Replace:    f.Replace,
		Source:     code,
		Hash:       hash(code),
		Definition: def,
		Manifest:   manifest,
	})
	var oe *ledger.OriginError
	if errors.As(err, &oe) {
		return v, &scripthost.Error{Class: scripthost.ClassLogic, Code: CodeNameTaken, Err: err, Message: fmt.Sprintf(
			"workflow name %q belongs to %s; %s claims it too. Give one of them another name (name: in its definition, or --name), or move the name to the new file on purpose (--replace)",
			oe.Workflow, oe.Have, oe.Want)}
	}
	return v, err
}

// CodeNameTaken is the error code of a workflow name claimed by a second file.
const CodeNameTaken = "name_taken"

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// load compiles a module once per content hash and validates its definition. source is
// what is stored (see Build): a stored version is loaded from the ledger alone, never
// from the files it was built from.
func (rt *Runtime) load(ctx context.Context, lang, path string, source []byte) (*loaded, error) {
	key := lang + ":" + hash(source)
	rt.mu.Lock()
	l, ok := rt.programs[key]
	rt.mu.Unlock()
	if ok {
		return l, nil
	}
	eng, ok := rt.cfg.Engines[lang]
	if !ok {
		return nil, fmt.Errorf("runtime: %s: no engine for language %q", path, lang)
	}
	prog, err := eng.Load(ctx, sandbox.Source{Name: filepath.Base(path), Code: source})
	if err != nil {
		return nil, err
	}
	raw, err := prog.Definition(ctx)
	if err != nil {
		_ = prog.Close(ctx)
		return nil, err
	}
	def, err := ParseDefinition(raw)
	if err != nil {
		_ = prog.Close(ctx)
		var se *scripthost.Error
		if errors.As(err, &se) {
			se.File = ""
			se.Message = filepath.Base(path) + ": " + se.Message
		}
		return nil, err
	}
	l = &loaded{prog: prog, def: def}
	rt.mu.Lock()
	if prev, ok := rt.programs[key]; ok {
		rt.mu.Unlock()
		_ = prog.Close(ctx)
		return prev, nil
	}
	rt.programs[key] = l
	rt.mu.Unlock()
	return l, nil
}

// program returns the loaded module of a stored workflow version. Stored versions never
// change, so each is read from the ledger once; the state machine asks for it at every
// step.
func (rt *Runtime) program(ctx context.Context, workflow string, version int) (*loaded, error) {
	key := workflow + "@" + strconv.Itoa(version)
	rt.mu.Lock()
	l, ok := rt.versions[key]
	rt.mu.Unlock()
	if ok {
		return l, nil
	}
	v, err := rt.cfg.Store.WorkflowVersion(ctx, workflow, version)
	if err != nil {
		return nil, fmt.Errorf("runtime: workflow %s version %d: %w", workflow, version, err)
	}
	if l, err = rt.load(ctx, v.Language, v.Path, v.Source); err != nil {
		return nil, err
	}
	rt.mu.Lock()
	rt.versions[key] = l
	rt.mu.Unlock()
	return l, nil
}

// Definition returns the definition of a stored workflow's newest version.
func (rt *Runtime) Definition(ctx context.Context, workflow string) (*Definition, int, error) {
	wf, err := rt.cfg.Store.Workflow(ctx, workflow)
	if err != nil {
		return nil, 0, err
	}
	l, err := rt.program(ctx, workflow, wf.LatestVersion)
	if err != nil {
		return nil, 0, err
	}
	return l.def, wf.LatestVersion, nil
}

// Close gives back the leases the host holds between passes and releases the loaded
// programs.
func (rt *Runtime) Close(ctx context.Context) error {
	if rt.leaser != nil {
		rt.releaseAll(ctx)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var errs []error
	for k, l := range rt.programs {
		errs = append(errs, l.prog.Close(ctx))
		delete(rt.programs, k)
	}
	clear(rt.versions)
	return errors.Join(errs...)
}

func (rt *Runtime) failpoint(name string) {
	if rt.cfg.Failpoint != nil {
		rt.cfg.Failpoint(name)
	}
}

func (rt *Runtime) now() time.Time { return rt.cfg.Clock() }
