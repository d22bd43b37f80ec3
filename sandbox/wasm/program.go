package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
)

// Reserved export names of the ABI.
const (
	exportABIVersion = "scripthost_abi_version"
	exportDescribe   = "scripthost_describe"
	exportInitialize = "_initialize"
	exportStart      = "_start"
)

const wasiModule = "wasi_snapshot_preview1"

// Program is a compiled module. It is safe for concurrent use: every Invoke has an
// instance of its own, new or reset to the state of a new one.
type Program struct {
	eng  *Engine
	name string
	*module
	closeOnce sync.Once
	closed    atomic.Bool
}

// module is a compiled, checked module binary. Programs loaded from the same bytes
// share one; the engine closes it when the last of them is closed.
type module struct {
	key      [32]byte
	compiled wazero.CompiledModule
	info     moduleInfo
	rewrite  rewriteInfo
	// tablePages is what the module's tables count for against an invocation's
	// memory cap (moduleInfo.tablePages): its linear memory gets the rest.
	tablePages uint32
	handlers   map[string]bool // exported functions () -> ()
	def        json.RawMessage
	refs       int // guarded by Engine.mu

	// reusable: instances of this module can be reset and reused (warm.go); pool
	// keeps them. created and reused count instances made and invocations that
	// reused one.
	reusable bool
	pool     pool
	created  atomic.Int64
	reused   atomic.Int64
}

// checkReusable decides whether instances of the module can be reset and reused: its
// tables and segments never change (so the memory and the mutable globals are all the
// state an instance has), its mutable globals are numbers (which wazero's API reads
// and writes whole). Its file descriptors cannot change (wasi.go).
func (p *Program) checkReusable() {
	if p.rewrite.mutatesTables || p.rewrite.dropsData || p.rewrite.opaqueGlobals {
		return
	}
	p.reusable = true
}

var _ sandbox.Program = (*Program)(nil)

// Definition returns the workflow definition the module returned from
// scripthost_describe. Function references are export names.
func (p *Program) Definition(context.Context) (json.RawMessage, error) {
	return append(json.RawMessage(nil), p.def...), nil
}

// Close releases the program; the compiled module is released with the last program
// that shares it. Invocations running at the time finish first.
func (p *Program) Close(ctx context.Context) error {
	var err error
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		if err = p.eng.release(ctx, p.module); err != nil {
			err = fmt.Errorf("wasm: close %s: %w", p.name, err)
		}
	})
	return err
}

// Handlers returns the names of the exported functions Invoke accepts, sorted.
func (p *Program) Handlers() []string {
	names := make([]string, 0, len(p.handlers))
	for n := range p.handlers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkImports refuses imports the host does not provide, so that the module fails at
// Load with a message naming them rather than at its first instantiation.
func (p *Program) checkImports() error {
	var bad []string
	for _, f := range p.compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasiModule:
			continue // wazero checks names and signatures against its WASI module
		case hostModule:
			sig, ok := hostSignatures[name]
			if !ok {
				bad = append(bad, fmt.Sprintf("%s.%s (no such host function)", mod, name))
				continue
			}
			if !allI32(f.ParamTypes(), sig[0]) || !allI32(f.ResultTypes(), sig[1]) {
				bad = append(bad, fmt.Sprintf("%s.%s (wrong signature %s, want %s)", mod, name,
					signature(f.ParamTypes(), f.ResultTypes()), i32Signature(sig[0], sig[1])))
			}
		default:
			bad = append(bad, fmt.Sprintf("%s.%s", mod, name))
		}
	}
	for _, m := range p.compiled.ImportedMemories() {
		mod, name, _ := m.Import()
		bad = append(bad, fmt.Sprintf("%s.%s (memory)", mod, name))
	}
	if len(bad) > 0 {
		return fmt.Errorf("module imports what the host does not provide: %s (allowed: %s.*, %s.*)",
			strings.Join(bad, ", "), hostModule, wasiModule)
	}
	return nil
}

// checkExports requires the ABI version export and collects the handlers.
func (p *Program) checkExports() error {
	exports := p.compiled.ExportedFunctions()
	v, ok := exports[exportABIVersion]
	if !ok {
		return fmt.Errorf("module does not export %s: not a scripthost guest (this host speaks ABI v%d)",
			exportABIVersion, ABIVersion)
	}
	if len(v.ParamTypes()) != 0 || !allI32(v.ResultTypes(), 1) {
		return fmt.Errorf("%s has signature %s, want () -> (i32)", exportABIVersion, signature(v.ParamTypes(), v.ResultTypes()))
	}
	if _, ok := exports[exportDescribe]; !ok {
		return fmt.Errorf("module does not export %s, so it declares no workflow definition", exportDescribe)
	}
	if _, ok := p.compiled.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("module does not export its memory as \"memory\"")
	}
	p.handlers = map[string]bool{}
	for name, f := range exports {
		if reserved(name) || len(f.ParamTypes()) != 0 || len(f.ResultTypes()) != 0 {
			continue
		}
		p.handlers[name] = true
	}
	if !p.handlers[exportDescribe] {
		d := exports[exportDescribe]
		return fmt.Errorf("%s has signature %s, want () -> ()", exportDescribe, signature(d.ParamTypes(), d.ResultTypes()))
	}
	return nil
}

func reserved(name string) bool {
	return name == exportABIVersion || name == exportInitialize || name == exportStart
}

// describe checks the ABI version and reads the definition, in one instance.
func (p *Program) describe(ctx context.Context) error {
	lim := p.eng.limits
	c := &call{prog: p, fn: exportDescribe, limits: lim}
	res, err := p.run(ctx, c, func(ctx context.Context, mod api.Module) error {
		out, err := mod.ExportedFunction(exportABIVersion).Call(ctx)
		if err != nil {
			return err
		}
		if v := api.DecodeI32(out[0]); v != ABIVersion {
			return loadError(p.name, "module speaks guest ABI v%d; this host speaks v%d", v, ABIVersion)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if res.Value == nil || string(res.Value) == "null" {
		return loadError(p.name, "%s returned no definition (call return_value with the definition JSON)", exportDescribe)
	}
	if err := p.checkDefinition(res.Value); err != nil {
		return loadError(p.name, "definition: %v", err)
	}
	p.def = res.Value
	return nil
}

// functionFields are the fields of a producer or consumer that hold function
// references.
var functionFields = []string{"handler", "prepare", "mutate", "next", "guard", "before", "after"}

// checkDefinition requires every function reference of the definition to name a
// handler export.
func (p *Program) checkDefinition(def json.RawMessage) error {
	var d struct {
		Producers map[string]map[string]json.RawMessage `json:"producers"`
		Consumers map[string]map[string]json.RawMessage `json:"consumers"`
	}
	if err := json.Unmarshal(def, &d); err != nil {
		return fmt.Errorf("not a JSON object with producers and consumers: %w", err)
	}
	check := func(where string, raw json.RawMessage) error {
		if raw == nil {
			return nil
		}
		var ref string
		if err := json.Unmarshal(raw, &ref); err != nil {
			return fmt.Errorf("%s: function reference %s is not a string", where, raw)
		}
		if !p.handlers[ref] {
			return fmt.Errorf("%s: %q is not an exported function () -> ()", where, ref)
		}
		return nil
	}
	for _, kind := range []struct {
		name     string
		handlers map[string]map[string]json.RawMessage
	}{{"producers", d.Producers}, {"consumers", d.Consumers}} {
		for name, h := range kind.handlers {
			for _, k := range functionFields {
				if err := check(kind.name+"."+name+"."+k, h[k]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Invoke runs one handler export in an instance in the state of a fresh one.
func (p *Program) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Result, error) {
	if p.closed.Load() {
		return sandbox.Result{}, fmt.Errorf("wasm: invoke %s: program closed", p.name)
	}
	if !p.handlers[inv.Function] {
		return sandbox.Result{}, &scripthost.Error{
			Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidWorkflow, File: p.name,
			Message: fmt.Sprintf("wasm: %q is not an exported handler function () -> () of %s", inv.Function, p.name),
		}
	}
	lim := mergeLimits(inv.Limits, p.eng.limits)
	if lim.MaxMemoryPages > p.eng.limits.MaxMemoryPages {
		lim.MaxMemoryPages = p.eng.limits.MaxMemoryPages
	}
	if err := p.info.checkMemory(lim.MaxMemoryPages, p.tablePages); err != nil {
		return sandbox.Result{}, (&sandbox.LimitError{Limit: "memory", Detail: err.Error()}).AsError()
	}
	c := &call{prog: p, fn: inv.Function, inv: inv, limits: lim}
	return p.run(ctx, c, nil)
}
