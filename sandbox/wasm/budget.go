package wasm

import "time"

// CompileLimits bound what Load compiles. wazero's compiler takes time that grows with
// the square of a function's blocks and branches, and a function, once started, is
// compiled to its end whatever the context says; so Load reads the code section
// before wazero does and refuses a module past any of these, naming the function and
// the limit. The zero value of each field takes the default given beside it.
type CompileLimits struct {
	// Timeout is how long Load waits for wazero to compile a module; 0 means one
	// minute plus 15 seconds per MiB of module. Past it Load fails, and the compile is
	// cancelled between two functions.
	Timeout time.Duration
	// MaxModuleBytes bounds the size of a module binary; 0 means 64 MiB.
	MaxModuleBytes int
	// MaxFunctions bounds the functions a module defines; 0 means 100,000.
	MaxFunctions int
	// MaxFunctionBytes bounds the size of one function body; 0 means 1 MiB.
	MaxFunctionBytes int
	// MaxLocals bounds the locals of one function; 0 means 50,000 (V8's limit). The
	// locals of all functions together may be at most 1,048,576, or MaxLocals when
	// that is larger.
	MaxLocals int
	// MaxBlocks bounds the blocks and branches of one function (block, loop, if,
	// else, br, br_if and br_table instructions), and so its nesting depth; 0 means
	// 5,000.
	MaxBlocks int
}

// Defaults of CompileLimits and Options.MaxTableElements, and the limits that are not
// configurable.
const (
	defaultMaxModuleBytes   = 64 << 20
	defaultMaxFunctions     = 100_000
	defaultMaxFunctionBytes = 1 << 20
	defaultMaxLocals        = 50_000
	defaultMaxBlocks        = 5_000
	defaultMaxTableElements = 65_536
	maxModuleLocals         = 1 << 20
	// maxTables and maxGlobals bound what a module defines: wazero makes a structure
	// for each in every instance, outside the memory the budget counts.
	maxTables  = 100
	maxGlobals = 10_000
	// tableElementBytes is what one table element is counted for against the memory
	// budget: wazero holds a reference in 8 bytes, and a table.grow allocates the
	// grown slice and the appended one at once.
	tableElementBytes = 16
)

// budgets are the limits a module is held to at Load, defaults filled in.
type budgets struct {
	moduleBytes   int
	functions     int
	functionBytes int
	locals        int
	moduleLocals  int
	blocks        int
	tableElements uint32
	timeout       time.Duration // 0: compileTimeout's default for the module's size
}

func newBudgets(c CompileLimits, tableElements uint32) budgets {
	or := func(v, def int) int {
		if v <= 0 {
			return def
		}
		return v
	}
	b := budgets{
		moduleBytes:   or(c.MaxModuleBytes, defaultMaxModuleBytes),
		functions:     or(c.MaxFunctions, defaultMaxFunctions),
		functionBytes: or(c.MaxFunctionBytes, defaultMaxFunctionBytes),
		locals:        or(c.MaxLocals, defaultMaxLocals),
		blocks:        or(c.MaxBlocks, defaultMaxBlocks),
		tableElements: tableElements,
		timeout:       c.Timeout,
	}
	b.moduleLocals = max(maxModuleLocals, b.locals)
	if b.tableElements == 0 {
		b.tableElements = defaultMaxTableElements
	}
	return b
}

// defaultBudgets are the budgets of an engine with the zero Options.
var defaultBudgets = newBudgets(CompileLimits{}, 0)

// compileTimeout is how long Load waits for the compilation of a module of n bytes.
// wazero compiles a Go guest at about 1.6 s per MiB on one core of a small machine
// (and twenty times slower under the race detector); the default leaves room for
// both.
func (b budgets) compileTimeout(n int) time.Duration {
	if b.timeout > 0 {
		return b.timeout
	}
	return time.Minute + time.Duration(n)*15*time.Second/(1<<20)
}

// tablePages is how many pages of the memory budget the module's tables are counted
// for: each table at the most it can hold (its maximum, which the rewrite sets to
// the cap when the module declares none) when the module grows tables, at its
// initial size otherwise, and the passive element segments each instance keeps.
func (info moduleInfo) tablePages(grows bool) uint32 {
	var elems uint64
	for _, t := range info.tables {
		if grows {
			elems += uint64(t.max)
		} else {
			elems += uint64(t.min)
		}
	}
	elems += info.passiveElems
	return uint32((elems*tableElementBytes + 1<<16 - 1) >> 16)
}
