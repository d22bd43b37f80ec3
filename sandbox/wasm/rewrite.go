package wasm

import (
	"errors"
	"fmt"
	"strings"
)

// Section ids of the WebAssembly binary format used by inspect and instrument.
const (
	sectionType     = 1
	sectionImport   = 2
	sectionFunction = 3
	sectionTable    = 4
	sectionMemory   = 5
	sectionGlobal   = 6
	sectionExport   = 7
	sectionStart    = 8
	sectionElement  = 9
	sectionCode     = 10
	sectionData     = 11
)

// sectionRank orders the non-custom sections as the binary format requires (the tag
// section of the exception-handling proposal sits between memory and global).
var sectionRank = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

// checkEvery is how many function entries and loop iterations pass between two
// termination checks.
const checkEvery = 1000

// Exports the rewrite adds. A module's own exports may not use the prefix.
const (
	reservedPrefix = "scripthost:"
	// exportRefused is an i64 global: the largest memory size, in pages, a refused
	// memory.grow asked for (0 when none was refused).
	exportRefused = reservedPrefix + "refused_pages"
	// exportStartFn is the function of the module's start section, which the rewrite
	// removes: the host calls it after instantiation, where it can be stopped.
	exportStartFn = reservedPrefix + "start"
)

// errPastEnd is a count larger than the bytes left to hold what it counts. wazero
// allocates what a count says before it reads the entries, so such a count in a few
// bytes could cost the host gigabytes: the binary is refused first.
var errPastEnd = errors.New("count past the end")

// refusal is a module the host refuses by policy rather than because its binary is
// malformed.
type refusal string

func (r refusal) Error() string { return string(r) }

// exportGlobal is the name under which the rewrite exports the module's mutable global
// i, so that a reused instance's globals can be reset.
func exportGlobal(i uint32) string { return fmt.Sprintf("%sglobal%d", reservedPrefix, i) }

// rewriteInfo is what instrument learned about a module.
type rewriteInfo struct {
	// grows: the module has memory.grow instructions, now calls to the recorder.
	grows bool
	// stop is the index of the i32 global the host sets to stop the guest (exported
	// as exportGlobal(stop), and one of mutableGlobals).
	stop uint32
	// start: the module had a start section, its function now exported as
	// exportStartFn.
	start bool
	// mutableGlobals are the indexes of the mutable globals, the rewrite's own
	// included, each exported as exportGlobal(i).
	mutableGlobals []uint32
	// mutatesTables: some instruction changes a table (table.set, table.grow,
	// table.fill, table.init, table.copy) or drops an element segment.
	mutatesTables bool
	// growsTables: some instruction is a table.grow.
	growsTables bool
	// dropsData: some instruction drops a data segment (data.drop).
	dropsData bool
	// opaqueGlobals: a mutable global holds a v128 or a reference, which wazero's
	// API cannot read and write whole.
	opaqueGlobals bool
}

type section struct {
	id         byte
	start, off int // header start, content start
	end        int
}

func splitSections(code []byte) ([]section, error) {
	var secs []section
	r := &reader{b: code, off: 8}
	for r.off < len(r.b) {
		start := r.off
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("section %d: %w", id, err)
		}
		end := r.off + int(size)
		if end > len(r.b) || end < r.off {
			return nil, fmt.Errorf("section %d: size %d past the end of the binary", id, size)
		}
		if id != 0 && sectionRank[id] == 0 {
			return nil, fmt.Errorf("unknown section id %d", id)
		}
		if id != 0 && id != 8 && id != 12 { // all but custom, start and data count are vectors
			n, err := (&reader{b: code[:end], off: r.off}).u32()
			if err != nil {
				return nil, fmt.Errorf("section %d: %w", id, err)
			}
			if int64(n) > int64(end-r.off) {
				return nil, fmt.Errorf("section %d: %w: %d entries in %d bytes", id, errPastEnd, n, end-r.off)
			}
		}
		secs = append(secs, section{id: id, start: start, off: r.off, end: end})
		r.off = end
	}
	return secs, nil
}

// instrument rewrites a module binary before wazero compiles it. Three things
// change; nothing that exists moves (no function, global or type index shifts, and
// branch depths inside a body are unchanged).
//
// A countdown at every function entry and at the top of every loop body makes every
// call and every loop iteration a place where a timed-out or cancelled guest stops.
// A new mutable i32 global counts down; a prologue decrements it and, when it reaches
// zero, calls a check function appended after the module's own and resets it to
// checkEvery. The check leaves native code for Go (a memory.grow of 0 pages, the one
// instruction that does so without an import, which would shift every function
// index), so that a guest computing for seconds never holds up the Go garbage
// collector, and traps (unreachable) when a second new global, which the host sets
// when the invocation's context ends, is set. wazero's own termination check
// (WithCloseOnContextDone) would leave native code at every loop iteration, about
// 45ns each: a guest's loops ran several times slower than their code. Once in
// checkEvery costs a few instructions per iteration.
//
// Every table without a declared maximum gets one, b.tableElements, so that wazero
// refuses a table.grow past it (the instruction returns -1, as it may) rather than
// allocating what it asks for.
//
// The function bodies are held to b as they are read: their size, locals, and
// blocks and branches (see CompileLimits).
//
// A start section goes: its function, which wazero would run inside
// InstantiateModule where nothing can stop it, is exported as exportStartFn, and the
// host calls it after instantiation, before _initialize.
//
// Every memory.grow becomes a call to a function appended after the module's own,
// which grows the memory and, when the growth is refused, records the size asked for
// in a new exported global (exportRefused). wazero refuses some growths itself (past
// a declared maximum, past 4 GiB) without asking the engine's allocator; the recorder
// sees them all, so a guest that dies after a refused growth is reported as a memory
// limit whoever refused it.
func instrument(code []byte, b budgets) ([]byte, rewriteInfo, error) {
	var info rewriteInfo
	secs, err := splitSections(code)
	if err != nil {
		return nil, info, err
	}
	var imp imports
	var tables []tableInfo
	var tableSec section
	var types, funcs, globals, mems, start uint32
	for _, sec := range secs {
		r := &reader{b: code[:sec.end], off: sec.off}
		var err error
		switch sec.id {
		case sectionImport:
			imp, err = readImports(r)
		case sectionType:
			types, err = readTypes(r)
		case sectionFunction:
			funcs, err = r.u32()
		case sectionMemory:
			mems, err = r.u32()
		case sectionTable:
			tables, err = readTables(r, b.tableElements)
			tableSec = sec
		case sectionStart:
			start, err = r.u32()
			info.start = err == nil
		case sectionGlobal:
			globals, info.mutableGlobals, info.opaqueGlobals, err = readGlobals(r)
		case sectionExport:
			err = checkExportNames(r)
		}
		if err != nil {
			return nil, info, fmt.Errorf("section %d: %w", sec.id, err)
		}
	}
	if imp.globals > 0 {
		return nil, info, refusal(fmt.Sprintf("module imports %d globals; the host provides none", imp.globals))
	}
	if imp.tables > 0 {
		return nil, info, refusal(fmt.Sprintf("module imports %d tables; the host provides none", imp.tables))
	}
	counter, stop, refused := globals, globals+1, globals+2
	check, recorder := imp.funcs+funcs, imp.funcs+funcs+1
	checkType, growType := types, types+1
	info.stop = stop

	var codeSec []byte
	for _, sec := range secs {
		if sec.id == sectionCode {
			body, err := instrumentCode(&reader{b: code[:sec.end], off: sec.off}, prologue(counter, check), recorder, imp.funcs, b, &info)
			if err != nil {
				if _, ok := err.(refusal); ok {
					return nil, info, err
				}
				return nil, info, fmt.Errorf("code section: %w", err)
			}
			codeSec = body
		}
	}

	newGlobals := append([]byte{0x7f, 0x01, 0x41}, appendS32(nil, checkEvery)...) // i32 mut = checkEvery
	newGlobals = append(newGlobals, 0x0b)
	newGlobals = append(newGlobals, 0x7f, 0x01, 0x41, 0x00, 0x0b) // i32 mut = 0: stop
	added := uint32(2)
	info.mutableGlobals = append(info.mutableGlobals, counter, stop)
	var exports [][]byte
	if info.grows {
		newGlobals = append(newGlobals, 0x7e, 0x01, 0x42, 0x00, 0x0b) // i64 mut = 0
		added++
		exports = append(exports, exportEntry(exportRefused, 0x03, refused))
		info.mutableGlobals = append(info.mutableGlobals, refused)
	}
	for _, g := range info.mutableGlobals {
		exports = append(exports, exportEntry(exportGlobal(g), 0x03, g))
	}
	if info.start {
		exports = append(exports, exportEntry(exportStartFn, 0x00, start))
	}
	edits := map[byte]func(old []byte) []byte{
		sectionGlobal: func(old []byte) []byte { return appendToVector(old, globals, added, newGlobals) },
	}
	if info.start {
		edits[sectionStart] = func([]byte) []byte { return nil } // removed
	}
	if len(tables) > 0 {
		edits[sectionTable] = func([]byte) []byte { return rewriteTables(code, tableSec, tables) }
	}
	newTypes, newFuncs := []byte{0x60, 0x00, 0x00}, appendU32(nil, checkType) // () -> ()
	if info.grows {
		newTypes = append(newTypes, 0x60, 0x01, 0x7f, 0x01, 0x7f) // (i32) -> (i32)
		newFuncs = appendU32(newFuncs, growType)
	}
	edits[sectionType] = func(old []byte) []byte {
		return appendToVector(old, types, uint32(len(newFuncs)), newTypes)
	}
	edits[sectionFunction] = func(old []byte) []byte {
		return appendToVector(old, funcs, uint32(len(newFuncs)), newFuncs)
	}
	if len(exports) > 0 {
		edits[sectionExport] = func(old []byte) []byte {
			var n uint32
			if old != nil {
				n, _ = (&reader{b: old}).u32()
			}
			return appendToVector(old, n, uint32(len(exports)), joinBytes(exports))
		}
	}
	if codeSec == nil {
		codeSec = appendU32(nil, 0)
	}
	edits[sectionCode] = func([]byte) []byte {
		n, _ := (&reader{b: codeSec}).u32()
		extra := checkFunc(stop, imp.mems+mems > 0)
		if info.grows {
			extra = append(extra, growRecorder(refused)...)
		}
		return appendToVector(codeSec, n, uint32(len(newFuncs)), extra)
	}
	return applyEdits(code, secs, edits), info, nil
}

// applyEdits copies the binary with each section in edits replaced by what its edit
// returns from the old contents (a section whose edit returns nil is dropped), and
// the edited sections it lacks added (from nil) in their place in the section order.
func applyEdits(code []byte, secs []section, edits map[byte]func(old []byte) []byte) []byte {
	appendSection := func(out []byte, id byte, body []byte) []byte {
		if body == nil {
			return out
		}
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		return append(out, body...)
	}
	done := map[byte]bool{}
	addMissing := func(out []byte, below int) []byte {
		for rank := 1; rank < below; rank++ {
			for id, edit := range edits {
				if sectionRank[id] == rank && !done[id] {
					out = appendSection(out, id, edit(nil))
					done[id] = true
				}
			}
		}
		return out
	}
	out := make([]byte, 0, len(code)+len(code)/8)
	out = append(out, code[:8]...)
	for _, sec := range secs {
		if sec.id != 0 {
			out = addMissing(out, sectionRank[sec.id])
		}
		if edit, ok := edits[sec.id]; ok && !done[sec.id] {
			out = appendSection(out, sec.id, edit(code[sec.off:sec.end]))
			done[sec.id] = true
			continue
		}
		out = append(out, code[sec.start:sec.end]...)
	}
	return addMissing(out, len(sectionRank)+1)
}

// rewriteTables returns the contents of the table section sec of code with each
// table's limits replaced by its min and max, so that a table declared without a
// maximum has the cap (see readTables).
func rewriteTables(code []byte, sec section, tables []tableInfo) []byte {
	out := appendU32(nil, uint32(len(tables)))
	r := &reader{b: code[:sec.end], off: sec.off}
	_, _ = r.u32()
	from := r.off // the first table's entry
	for _, t := range tables {
		out = append(out, code[from:t.limits]...)
		out = append(out, 0x01)
		out = appendU32(appendU32(out, t.min), t.max)
		r := &reader{b: code[:t.end], off: t.limits + 1}
		_, _ = r.u32() // min
		if code[t.limits] == 1 {
			_, _ = r.u32() // max
		}
		out = append(out, code[r.off:t.end]...)
		from = t.end
	}
	return out
}

// appendToVector returns a vector section's contents (old, nil for none, holding n
// entries) with added more entries, encoded in extra, at its end.
func appendToVector(old []byte, n, added uint32, extra []byte) []byte {
	out := appendU32(nil, n+added)
	if old != nil {
		r := &reader{b: old}
		_, _ = r.u32()
		out = append(out, old[r.off:]...)
	}
	return append(out, extra...)
}

func exportEntry(name string, kind byte, idx uint32) []byte {
	b := appendU32(nil, uint32(len(name)))
	b = append(b, name...)
	b = append(b, kind)
	return appendU32(b, idx)
}

func joinBytes(parts [][]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// checkExportNames refuses a module whose own exports use the reserved prefix.
func checkExportNames(r *reader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		l, err := r.u32()
		if err != nil {
			return err
		}
		if int(l) > len(r.b)-r.off {
			return errTruncated
		}
		name := string(r.b[r.off : r.off+int(l)])
		if strings.HasPrefix(name, reservedPrefix) {
			return refusal(fmt.Sprintf("export %q: names starting with %q are reserved for the host", name, reservedPrefix))
		}
		r.off += int(l)
		if _, err := r.byte(); err != nil {
			return err
		}
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

// growRecorder is the body of the function every memory.grow is routed to; g is the
// i64 global holding the largest size refused, in pages:
//
//	(func (param $delta i32) (result i32) (local $r i32) (local $want i64)
//	  (local.tee $r (memory.grow (local.get $delta)))
//	  (if (i32.eq (i32.const -1)) (then
//	    (local.tee $want (i64.add (i64.extend_i32_u (memory.size)) (i64.extend_i32_u (local.get $delta))))
//	    (if (i64.gt_u (global.get $g)) (then (global.set $g (local.get $want))))))
//	  (local.get $r))
func growRecorder(g uint32) []byte {
	b := []byte{
		0x02, 0x01, 0x7f, 0x01, 0x7e, // locals: 1 i32, 1 i64
		0x20, 0x00, 0x40, 0x00, 0x22, 0x01, // local.get 0; memory.grow; local.tee 1
		0x41, 0x7f, 0x46, 0x04, 0x40, // i32.const -1; i32.eq; if
		0x3f, 0x00, 0xad, 0x20, 0x00, 0xad, 0x7c, 0x22, 0x02, // size + delta as i64; local.tee 2
		0x23, // global.get g
	}
	b = appendU32(b, g)
	b = append(b, 0x56, 0x04, 0x40, 0x20, 0x02, 0x24) // i64.gt_u; if; local.get 2; global.set g
	b = appendU32(b, g)
	b = append(b, 0x0b, 0x0b, 0x20, 0x01, 0x0b) // end; end; local.get 1; end
	return append(appendU32(nil, uint32(len(b))), b...)
}

// checkFunc is the body of the check function described on instrument, for the stop
// global at index stop; without a memory (a module the engine refuses later) it only
// tests the global:
//
//	(func (drop (memory.grow (i32.const 0))) (if (global.get $stop) (then unreachable)))
func checkFunc(stop uint32, memory bool) []byte {
	b := []byte{0x00} // no locals
	if memory {
		b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1a) // i32.const 0; memory.grow; drop
	}
	b = append(b, 0x23)
	b = appendU32(b, stop)
	b = append(b, 0x04, 0x40, 0x00, 0x0b, 0x0b) // if; unreachable; end; end
	return append(appendU32(nil, uint32(len(b))), b...)
}

// prologue is the countdown described on instrument, for the global at index g and
// the check function at index check:
//
//	global.get g; i32.eqz
//	if; call check; i32.const checkEvery; global.set g; end
//	global.get g; i32.const 1; i32.sub; global.set g
func prologue(g, check uint32) []byte {
	b := append([]byte{0x23}, appendU32(nil, g)...)
	b = append(b, 0x45, 0x04, 0x40, opCall)
	b = appendU32(b, check)
	b = append(b, 0x41)
	b = appendS32(b, checkEvery)
	b = append(b, 0x24)
	b = appendU32(b, g)
	b = append(b, 0x0b, 0x23)
	b = appendU32(b, g)
	b = append(b, 0x41, 0x01, 0x6b, 0x24)
	return appendU32(b, g)
}

// imports counts a module's imports by kind.
type imports struct {
	funcs, tables, mems, globals uint32
}

// readImports counts the imports of an import section.
func readImports(r *reader) (imports, error) {
	var imp imports
	n, err := r.u32()
	if err != nil {
		return imp, err
	}
	skipName := func() error {
		l, err := r.u32()
		if err != nil {
			return err
		}
		return r.skip(int(l))
	}
	limits := func() error {
		flags, err := r.byte()
		if err != nil {
			return err
		}
		if _, err := r.u32(); err != nil {
			return err
		}
		if flags&1 != 0 {
			_, err = r.u32()
		}
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := skipName(); err != nil {
			return imp, err
		}
		if err := skipName(); err != nil {
			return imp, err
		}
		kind, err := r.byte()
		if err != nil {
			return imp, err
		}
		switch kind {
		case 0: // function: type index
			imp.funcs++
			_, err = r.u32()
		case 1: // table: reference type, limits
			imp.tables++
			if _, err = r.byte(); err == nil {
				err = limits()
			}
		case 2: // memory: limits
			imp.mems++
			err = limits()
		case 3: // global: value type, mutability
			imp.globals++
			if _, err = r.byte(); err == nil {
				_, err = r.byte()
			}
		case 4: // tag: attribute, type index
			if _, err = r.byte(); err == nil {
				_, err = r.u32()
			}
		default:
			return imp, fmt.Errorf("import %d: unknown kind %#x", i, kind)
		}
		if err != nil {
			return imp, err
		}
	}
	return imp, nil
}

// readTypes reads a type section and returns the number of types. It checks every
// count against the bytes left: wazero allocates what a count says before it reads
// the entries, so a count of 2^32 parameters in a few bytes would cost the host 4 GiB.
func readTypes(r *reader) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	vec := func(what string, i uint32) error {
		l, err := r.u32()
		if err != nil {
			return err
		}
		if err := r.skip(int(l)); err != nil {
			return fmt.Errorf("type %d: %w: %d %s", i, errPastEnd, l, what)
		}
		return nil
	}
	if int(n) > len(r.b)-r.off {
		return 0, fmt.Errorf("%d types in %d bytes", n, len(r.b)-r.off)
	}
	for i := uint32(0); i < n; i++ {
		form, err := r.byte()
		if err != nil {
			return 0, err
		}
		if form != 0x60 {
			return 0, fmt.Errorf("type %d: form %#x, want a function type (0x60)", i, form)
		}
		if err := vec("parameters", i); err != nil {
			return 0, err
		}
		if err := vec("results", i); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// readGlobals reads a global section: the number of globals, the indexes of the
// mutable ones, and whether any mutable one is not a number (i32, i64, f32, f64).
func readGlobals(r *reader) (n uint32, mutable []uint32, opaque bool, err error) {
	if n, err = r.u32(); err != nil {
		return 0, nil, false, err
	}
	if int(n) > len(r.b)-r.off {
		return 0, nil, false, fmt.Errorf("%d globals in %d bytes", n, len(r.b)-r.off)
	}
	for i := uint32(0); i < n; i++ {
		t, err := r.byte()
		if err != nil {
			return 0, nil, false, err
		}
		mut, err := r.byte()
		if err != nil {
			return 0, nil, false, err
		}
		if mut == 1 {
			mutable = append(mutable, i)
			opaque = opaque || t < 0x7c || t > 0x7f
		}
		if err := r.skipConstExpr(); err != nil {
			return 0, nil, false, fmt.Errorf("global %d: %w", i, err)
		}
	}
	return n, mutable, opaque, nil
}

// instrumentCode adds pro to the start of every function body and replaces every
// memory.grow with a call to function recorder. It records in info whether it
// replaced any and which instructions change tables or drop segments. It refuses a
// body past the budgets b, naming the function by its index in the module's function
// index space, where the imports of functions come first.
func instrumentCode(r *reader, pro []byte, recorder, imports uint32, b budgets, info *rewriteInfo) ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if int(n) > len(r.b)-r.off {
		return nil, fmt.Errorf("%d function bodies in %d bytes", n, len(r.b)-r.off)
	}
	call := appendU32([]byte{opCall}, recorder)
	out := appendU32(make([]byte, 0, len(r.b)-r.off+int(n)*(len(pro)+2)), n)
	var body []byte
	var moduleLocals uint64
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, err
		}
		end := r.off + int(size)
		if end > len(r.b) || end < r.off {
			return nil, fmt.Errorf("function %d: size %d past the end of the section", i, size)
		}
		fn := imports + i
		if int64(size) > int64(b.functionBytes) {
			return nil, refusal(fmt.Sprintf("function %d has a body of %d bytes, above the limit of %d bytes", fn, size, b.functionBytes))
		}
		fr := &reader{b: r.b[:end], off: r.off}
		groups, err := fr.u32()
		if err != nil {
			return nil, err
		}
		if int64(groups) > int64(end-fr.off) {
			return nil, fmt.Errorf("function %d: %w: %d local groups", i, errPastEnd, groups)
		}
		var locals uint64
		for g := uint32(0); g < groups; g++ {
			count, err := fr.u32()
			if err != nil {
				return nil, err
			}
			if locals += uint64(count); locals > uint64(b.locals) {
				return nil, refusal(fmt.Sprintf("function %d declares more than %d locals, the limit", fn, b.locals))
			}
			if moduleLocals += uint64(count); moduleLocals > uint64(b.moduleLocals) {
				return nil, refusal(fmt.Sprintf("function %d brings the module's locals past %d, the limit", fn, b.moduleLocals))
			}
			t, err := fr.byte()
			if err != nil {
				return nil, err
			}
			if t < 0x6f || t > 0x7f {
				return nil, fmt.Errorf("function %d: unsupported local type %#x", i, t)
			}
		}
		body = append(body[:0], r.b[r.off:fr.off]...)
		body = append(body, pro...)
		copied := fr.off
		blocks := 0
		err = decodeBody(r.b[:end], fr.off, func(in instr) error {
			switch {
			case in.op >= opBlock && in.op <= opElse || in.op >= opBr && in.op <= opBrTable:
				// wazero's compile time grows with the square of these.
				if blocks++; blocks > b.blocks {
					return refusal(fmt.Sprintf("function %d has more than %d blocks and branches, the limit", fn, b.blocks))
				}
			case in.op == opTableSet || in.op == prefixMisc && (in.sub >= miscTableInit && in.sub <= miscTableGrow || in.sub == miscTableFill):
				info.mutatesTables = true
				info.growsTables = info.growsTables || in.op == prefixMisc && in.sub == miscTableGrow
			case in.op == prefixMisc && in.sub == miscDataDrop:
				info.dropsData = true
			}
			if in.op == opLoop {
				body = append(body, r.b[copied:in.end]...)
				body = append(body, pro...)
				copied = in.end
				return nil
			}
			if in.op != opMemoryGrow {
				return nil
			}
			if mem, _ := (&reader{b: r.b[:in.end], off: in.start + 1}).u32(); mem != 0 {
				return fmt.Errorf("offset %d: memory.grow of memory %d: multiple memories are not supported", in.start, mem)
			}
			body = append(body, r.b[copied:in.start]...)
			body = append(body, call...)
			copied, info.grows = in.end, true
			return nil
		})
		if err != nil {
			if _, ok := err.(refusal); ok {
				return nil, err
			}
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		body = append(body, r.b[copied:end]...)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
		r.off = end
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%d trailing bytes", len(r.b)-r.off)
	}
	return out, nil
}

// appendS32 appends v as a signed LEB128 value (the immediate of i32.const).
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
