package wasm

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// instance is one instance of a compiled module. An instance whose module passes the
// reuse conditions (reusable) carries the snapshot of its state right after
// initialization and, after an invocation that ended normally, is reset to it and
// kept for the next invocation of the same module.
type instance struct {
	mod api.Module
	mem *linearMemory
	io  *instanceIO
	// fns are the exports invoked in the instance, looked up at their first call and
	// kept with it: wazero makes each looked-up function a call engine of its own, its
	// stack allocated anew, which cost a reused instance's phase more than its guest's
	// work. An instance serves one invocation at a time, as a function must.
	fns map[string]api.Function
	// snap is the state after initialization; nil when the instance is not reused.
	snap *snapshot
	// pages, when not nil, reports the pages of the instance's memory written since
	// the snapshot (pages_linux.go), and reset copies back those only.
	pages *pageTracker
	// pageResets counts the resets made by copying back the written pages only.
	pageResets int
	// stop is the rewrite's stop global: set, the guest traps at its next check
	// (see instrument). stopMu orders setting it against the end of the call that
	// armed it, so that a late stop never reaches the next invocation.
	stop   api.MutableGlobal
	stopMu sync.Mutex
}

// arm makes the end of ctx stop the guest while it runs in the instance: the stop
// global is set, and the guest traps at its next check, within checkEvery calls or
// loop iterations. disarm ends that and reports whether the guest was stopped; a stop
// that comes after it (the context ending just then) does nothing.
func (in *instance) arm(ctx context.Context) (disarm func() (stopped bool)) {
	var armed, stopped bool // this arming's, guarded by stopMu
	halt := func() {
		in.stopMu.Lock()
		defer in.stopMu.Unlock()
		if armed {
			in.stop.Set(1)
			stopped = true
		}
	}
	in.stopMu.Lock()
	armed = true
	in.stopMu.Unlock()
	if ctx.Err() != nil { // ended already: stopped from the first check on
		halt()
	}
	unregister := context.AfterFunc(ctx, halt)
	return func() bool {
		unregister()
		in.stopMu.Lock()
		defer in.stopMu.Unlock()
		armed = false
		return stopped
	}
}

// guarded runs fn, which calls into the instance, armed: a guest stopped by the end of
// ctx is recorded in c.stopped.
func (in *instance) guarded(ctx context.Context, c *call, fn func() error) error {
	disarm := in.arm(ctx)
	err := fn()
	if disarm() {
		c.stopped = true
	}
	return err
}

// call calls f in the instance, guarded.
func (in *instance) call(ctx context.Context, c *call, f api.Function) error {
	return in.guarded(ctx, c, func() error {
		_, err := f.Call(ctx)
		return err
	})
}

// trackMinBytes is the smallest memory whose pages are tracked. Tracking costs a
// page fault at the first write to each page in an invocation, and at reset two scans
// of the page tables, the second of which write-protects the pages again and so
// flushes them from every CPU's TLB; copying costs about 22 µs per MiB. Measured on
// Linux 6.18 in this 2-CPU VM: a Go guest's 3.4 MiB memory with 31 pages written per
// phase reset in about 40 µs instead of 150 µs; a 64 KiB memory copies in 1.2 µs,
// less than tracking one page written costs.
const trackMinBytes = 1 << 20

// newMemory returns the memory of a new instance for an invocation under capPages:
// mapped outside the Go heap, so that its written pages can be tracked, when the
// instance may be reused and the kernel tracks pages.
func (p *Program) newMemory(capPages uint32) *linearMemory {
	if p.reusable && !p.eng.opts.FreshInstances && p.eng.trackMin >= 0 {
		if t, _ := tracker(); t != nil {
			return newMappedMemory(capPages)
		}
	}
	return newLinearMemory(capPages)
}

// snapshot is an instance's state after initialization: its memory and the values
// of its mutable globals (all exported by the rewrite).
type snapshot struct {
	image   []byte
	globals []api.MutableGlobal
	values  []uint64
	// wallReads and monoReads are how many times the initialization read the
	// clocks.
	wallReads, monoReads int64
	// goRand are the addresses of a Go runtime's random generator states, which
	// are reseeded for every invocation; nil when the initialization read no
	// randomness.
	goRand []uint32
}

// instanceIO is what an instance's WASI configuration reads: it is fixed when the
// instance is created, so it reads the invocation using the instance through c.
type instanceIO struct {
	c *call
}

type ioWriter struct {
	io     *instanceIO
	stderr bool
}

func (w ioWriter) Write(p []byte) (int, error) {
	c := w.io.c
	c.touch()
	if w.stderr {
		return c.stderr.Write(p)
	}
	return c.stdout.Write(p)
}

type ioRand struct{ io *instanceIO }

func (r ioRand) Read(p []byte) (int, error) {
	c := r.io.c
	n, err := c.clock.rand.Read(p)
	if c.initializing {
		c.initRandom = append(c.initRandom, p[:n]...)
	}
	return n, err
}

// clock is an invocation's view of time and randomness through WASI (ABI.md, "Clocks
// and randomness"). The fake clocks advance 1ms per reading; an invocation reusing an
// instance resumes them where the instance's initialization left them, so that it
// reads what it would have read in a fresh instance.
type clock struct {
	det        bool  // fixed wall clock at wall, monotonic from 0 (Determinism)
	real       bool  // the host's clocks
	wall, mono int64 // the last readings (nanoseconds)
	// wallReads and monoReads count the readings.
	wallReads, monoReads int64
	rand                 io.Reader
}

// skip advances the fake clocks as if they had been read wallReads and monoReads
// times.
func (k *clock) skip(wallReads, monoReads int64) {
	if k.real {
		return
	}
	if !k.det {
		k.wall += wallReads * int64(time.Millisecond)
	}
	k.mono += monoReads * int64(time.Millisecond)
	k.wallReads, k.monoReads = wallReads, monoReads
}

// fakeEpoch is where the fake wall clock starts (wazero's): 2022-01-01T00:00:00Z.
const fakeEpoch = 1640995200 * int64(time.Second)

var processStart = time.Now()

// newClock returns the clocks and random source of invocation c.
func (p *Program) newClock(c *call) clock {
	if d := c.inv.Deterministic; d != nil {
		var seed [32]byte
		binary.LittleEndian.PutUint64(seed[:], uint64(d.Seed))
		return clock{det: true, wall: d.Now.UnixNano(), rand: rand.NewChaCha8(seed)}
	}
	return clock{
		real: p.eng.opts.WASI.RealClock,
		wall: fakeEpoch - int64(time.Millisecond),
		mono: -int64(time.Millisecond),
		rand: p.eng.randSource(),
	}
}

func (k *clock) walltime() (int64, int32) {
	k.wallReads++
	switch {
	case k.real:
		now := time.Now()
		return now.Unix(), int32(now.Nanosecond())
	case !k.det:
		k.wall += int64(time.Millisecond)
	}
	return k.wall / 1e9, int32(k.wall % 1e9)
}

func (k *clock) nanotime() int64 {
	k.monoReads++
	if k.real {
		return int64(time.Since(processStart))
	}
	// A monotonic clock that never moves would hang a guest runtime waiting on a
	// timer; this one moves 1ms per reading, the same on every run.
	k.mono += int64(time.Millisecond)
	return k.mono
}

// moduleConfig is an instance's configuration: no files, arguments, environment or
// sockets; stdout, stderr, clocks and randomness are those of the invocation using
// the instance (io.c).
func (p *Program) moduleConfig(iio *instanceIO) wazero.ModuleConfig {
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdout(ioWriter{io: iio}).
		WithStderr(ioWriter{io: iio, stderr: true}).
		WithWalltime(func() (int64, int32) { return iio.c.clock.walltime() }, 1).
		WithNanotime(func() int64 { return iio.c.clock.nanotime() }, 1).
		WithRandSource(ioRand{io: iio})
	if p.eng.opts.WASI.RealClock {
		cfg = cfg.WithSysNanosleep()
	}
	return cfg
}

// instantiate creates an instance for invocation c and runs _initialize in it. When
// the module is reusable, the instance gets its snapshot if its initialization called
// no host function and wrote nothing, so that a reset instance is what a fresh one
// is after initialization: the clocks it read resume where it left them, and if it
// read random_get, it must be a Go runtime whose generator the engine can find and
// reseed for every invocation (gorand.go).
func (p *Program) instantiate(ctx context.Context, c *call) (*instance, error) {
	in := &instance{mem: c.mem, io: &instanceIO{c: c}}
	ctx = experimental.WithMemoryAllocator(ctx, in.mem.allocator())
	mod, err := p.eng.runtime.InstantiateModule(ctx, p.compiled, p.moduleConfig(in.io))
	if err != nil {
		in.mem.release()
		return nil, p.classify(c.parent, c, "instantiate", err)
	}
	in.mod = mod
	in.stop = mod.ExportedGlobal(exportGlobal(p.rewrite.stop)).(api.MutableGlobal)
	for _, name := range []string{exportStartFn, exportInitialize} {
		f := mod.ExportedFunction(name)
		if f == nil {
			continue
		}
		c.initializing = true
		err := in.call(ctx, c, f)
		c.initializing = false
		if err != nil && !exitedOK(err) {
			where := name
			if name == exportStartFn {
				where = "start"
			}
			err = p.failure(c.parent, c, mod, where, err)
			in.close()
			return nil, err
		}
	}
	// A context that ended during initialization set the stop global; the
	// snapshot must not keep it.
	in.stop.Set(0)
	if p.reusable && !c.initHost && !mod.IsClosed() {
		in.snap = takeSnapshot(mod, p.rewrite.mutableGlobals)
	}
	if in.snap != nil {
		in.pages = p.track(in)
		in.snap.wallReads, in.snap.monoReads = c.clock.wallReads, c.clock.monoReads
		if len(c.initRandom) > 0 {
			if in.snap.goRand = findGoRand(in.snap.image, c.initRandom); in.snap.goRand == nil {
				in.snap = nil
			}
		}
	}
	return in, nil
}

// track starts tracking the written pages of in's memory, a snapshot just taken, and
// returns the tracker, or nil where it did not: memories under the engine's trackMin
// bytes, or not in a mapping of their own.
func (p *Program) track(in *instance) *pageTracker {
	t, _ := tracker()
	if t == nil || len(in.snap.image) < p.eng.trackMin {
		return nil
	}
	b, ok := in.mod.Memory().Read(0, uint32(len(in.snap.image)))
	if !ok || !in.mem.inMapping(b) || t.track(b) != nil {
		return nil
	}
	return t
}

// resume prepares a reset instance for invocation c: the fake clocks continue from the
// snapshot, and a Go runtime's generator is reseeded from c's random source.
func (in *instance) resume(c *call) error {
	c.clock.skip(in.snap.wallReads, in.snap.monoReads)
	if in.snap.goRand != nil {
		return reseedGoRand(in.mod.Memory(), in.snap.goRand, c.clock.rand)
	}
	return nil
}

func takeSnapshot(mod api.Module, globals []uint32) *snapshot {
	mem := mod.Memory()
	if mem == nil {
		return nil
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil
	}
	s := &snapshot{image: append([]byte(nil), b...)}
	for _, i := range globals {
		g, ok := mod.ExportedGlobal(exportGlobal(i)).(api.MutableGlobal)
		if !ok {
			return nil
		}
		s.globals = append(s.globals, g)
		s.values = append(s.values, g.Get())
	}
	return s
}

// reset restores the instance to its snapshot, and reports whether it could: an
// instance whose memory grew past the snapshot (wazero's memories cannot shrink) or
// whose module was closed is not reused. A tracked memory gets back the pages written
// since the snapshot (every write reaches a page through the MMU, the guest's, the
// host functions' and the engine's alike, so none is missed); another is copied back
// whole.
func (in *instance) reset() bool {
	if in.snap == nil || in.mod.IsClosed() {
		return false
	}
	mem := in.mod.Memory()
	if int(mem.Size()) != len(in.snap.image) {
		return false
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return false
	}
	if in.pages != nil {
		if err := in.pages.written(b, func(off, end int) { copy(b[off:end], in.snap.image[off:end]) }); err != nil {
			return false
		}
		in.pageResets++
	} else {
		copy(b, in.snap.image)
	}
	for i, g := range in.snap.globals {
		g.Set(in.snap.values[i])
	}
	return true
}

// fn returns the instance's export name, nil if there is none.
func (in *instance) fn(name string) api.Function {
	if f, ok := in.fns[name]; ok {
		return f
	}
	f := in.mod.ExportedFunction(name)
	if in.fns == nil {
		in.fns = map[string]api.Function{}
	}
	in.fns[name] = f
	return f
}

// close closes the instance and releases its memory; the instance must not be
// running.
func (in *instance) close() {
	_ = in.mod.Close(context.Background())
	in.mem.release()
}

// pool keeps a module's reset instances: at most GOMAXPROCS of them, and no more than
// the engine's idle budget allows across all modules.
type pool struct {
	mu     sync.Mutex
	idle   []*instance
	closed bool
	budget *idleBudget
}

// idleBudget bounds the memory held by idle instances across an engine's modules.
type idleBudget struct {
	mu        sync.Mutex
	used, max int64
}

// cost is what an idle instance holds: its memory and its snapshot's copy.
func (in *instance) cost() int64 { return 2 * int64(len(in.snap.image)) }

func (b *idleBudget) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *idleBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// take returns an idle instance whose memory fits under capPages (and, when det,
// whose initialization drew no random numbers), or nil.
func (pl *pool) take(capPages uint32, det bool) *instance {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for len(pl.idle) > 0 {
		in := pl.idle[len(pl.idle)-1]
		if det && in.snap.goRand != nil {
			return nil
		}
		pl.idle = pl.idle[:len(pl.idle)-1]
		pl.budget.release(in.cost())
		if uint64(len(in.snap.image)) <= uint64(capPages)<<16 {
			return in
		}
		in.close()
	}
	return nil
}

// put keeps a reset instance, or closes it when the pool is full or closed, or the
// engine's idle budget is spent.
func (pl *pool) put(in *instance) {
	pl.mu.Lock()
	if !pl.closed && len(pl.idle) < goruntime.GOMAXPROCS(0) && pl.budget.reserve(in.cost()) {
		pl.idle = append(pl.idle, in)
		in = nil
	}
	pl.mu.Unlock()
	if in != nil {
		in.close()
	}
}

// close closes the idle instances; instances put afterwards are closed at once.
func (pl *pool) close() {
	pl.mu.Lock()
	idle := pl.idle
	pl.idle, pl.closed = nil, true
	pl.mu.Unlock()
	for _, in := range idle {
		pl.budget.release(in.cost())
		in.close()
	}
}
