package js

import (
	"container/heap"
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost/sandbox"
)

// Timers run inside the invocation that set them. When the handler's promise is
// pending and no job is left, the engine runs the next due timer (waiting for it in
// real time, or, in deterministic mode, moving the virtual clock to its due time at
// once), until the promise settles. Whatever is still pending then is cancelled, with
// a console warning: a timer never outlives its invocation, and the time spent waiting
// counts against the invocation's Timeout.

// maxPendingTimers bounds the timers one invocation may have pending at once; setting
// more ends the invocation with a "timers" LimitError.
const maxPendingTimers = 10000

type timer struct {
	id       int64
	due      time.Duration // since the invocation started (real or virtual)
	seq      int64         // orders timers due at the same time
	interval time.Duration // for setInterval
	repeat   bool
	nesting  int
	fn       goja.Callable
	args     []goja.Value
	index    int // in the heap
}

type timers struct {
	p       *platform
	byID    map[int64]*timer
	queue   timerQueue
	nextID  int64
	seq     int64
	nesting int // of the timer whose callback is running
	// virtual is the deterministic clock's advance since Determinism.Now.
	virtual time.Duration
}

func (t *timers) init(p *platform) { t.p = p }

// now is the time since the invocation started: virtual in deterministic mode.
func (t *timers) now() time.Duration {
	if t.p.det != nil {
		return t.virtual
	}
	return time.Since(t.p.in.start)
}

func (t *timers) add(fn goja.Callable, delay float64, args []goja.Value, repeat bool) int64 {
	if len(t.byID) >= maxPendingTimers {
		t.p.in.abort(&sandbox.LimitError{Limit: "timers", Detail: fmt.Sprintf("more than %d timers pending at once", maxPendingTimers)})
		panic(t.p.in.vm.NewTypeError("timer limit"))
	}
	if t.byID == nil {
		t.byID = map[int64]*timer{}
	}
	// The HTML standard's clamp: timers nested more than 5 deep wait at least 4 ms.
	d := time.Duration(0)
	if delay > 0 && delay < float64(1<<31) {
		d = time.Duration(delay * float64(time.Millisecond))
	}
	nesting := t.nesting + 1
	if nesting > 5 && d < 4*time.Millisecond {
		d = 4 * time.Millisecond
	}
	t.nextID++
	t.seq++
	tm := &timer{id: t.nextID, due: t.now() + d, seq: t.seq, interval: d, repeat: repeat, nesting: nesting, fn: fn, args: args}
	t.byID[tm.id] = tm
	heap.Push(&t.queue, tm)
	return tm.id
}

func (t *timers) clear(id int64) {
	if tm, ok := t.byID[id]; ok {
		delete(t.byID, id)
		heap.Remove(&t.queue, tm.index)
	}
}

// runNext runs the next due timer, first waiting for it. It reports false when no
// timer is pending.
func (t *timers) runNext(ctx context.Context) (bool, error) {
	if t.queue.Len() == 0 {
		return false, nil
	}
	tm := heap.Pop(&t.queue).(*timer)
	in := t.p.in
	if t.p.det != nil {
		t.virtual = max(t.virtual, tm.due)
	} else if wait := tm.due - t.now(); wait > 0 {
		if in.mem != nil {
			in.mem.inJS.Store(false)
		}
		w := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			w.Stop()
		case <-w.C:
		}
		if in.mem != nil {
			in.mem.inJS.Store(true)
		}
		if ctx.Err() != nil {
			heap.Push(&t.queue, tm)
			return false, context.Cause(ctx)
		}
	}
	if tm.repeat {
		tm.due = t.now() + max(tm.interval, time.Millisecond)
		t.seq++
		tm.seq = t.seq
		heap.Push(&t.queue, tm)
	} else {
		delete(t.byID, tm.id)
	}
	t.nesting = tm.nesting
	_, err := tm.fn(goja.Undefined(), tm.args...)
	t.nesting = 0
	return true, err
}

// eventLoop runs timers while promise (the handler's result, nil when it returned a
// plain value) is pending, then cancels the timers left.
func (in *instance) eventLoop(promise *goja.Promise) error {
	t := &in.platform.timers
	for promise != nil && promise.State() == goja.PromiseStatePending && in.interruptReason() == nil {
		ran, err := t.runNext(in.ctx)
		if err != nil {
			return err
		}
		if !ran {
			break
		}
	}
	if n := len(t.byID); n > 0 && in.interruptReason() == nil {
		in.emit("warn", fmt.Sprintf("%d timer(s) still pending when the handler finished were cancelled: timers do not outlive an invocation", n))
	}
	t.byID, t.queue = nil, nil
	return nil
}

func (p *platform) installTimers(set func(string, any)) {
	vm := p.in.vm
	set("timerAdd", func(call goja.FunctionCall) goja.Value {
		fn, ok := goja.AssertFunction(call.Argument(0))
		if !ok {
			p.throwType("the timer handler is not a function")
		}
		var args []goja.Value
		if a, ok := call.Argument(2).(*goja.Object); ok {
			n := int(a.Get("length").ToInteger())
			for i := range n {
				args = append(args, a.Get(fmt.Sprint(i)))
			}
		}
		return vm.ToValue(p.timers.add(fn, call.Argument(1).ToFloat(), args, call.Argument(3).ToBoolean()))
	})
	set("timerClear", func(id int64) { p.timers.clear(id) })
	// uncaught ends the invocation with an exception nothing caught (a queueMicrotask
	// callback's), as an uncaught exception in the handler would.
	set("uncaught", func(v goja.Value) {
		p.in.abort(p.in.scriptError(v, nil))
	})
	set("now", func() float64 { return float64(p.timers.now()) / float64(time.Millisecond) })
	set("timeOrigin", func() float64 {
		if p.det != nil {
			return float64(p.det.Now.UnixMicro()) / 1000
		}
		return float64(p.in.start.UnixMicro()) / 1000
	})
	// The next three read zone-less date strings in the deterministic time zone.
	set("processOffset", func(ms float64) int {
		_, off := time.UnixMilli(int64(ms)).In(time.Local).Zone()
		return -off / 60
	})
	set("isLocalDateString", isLocalDateString)
	set("fromWall", func(ms float64) float64 {
		w := time.UnixMilli(int64(ms)).UTC()
		t := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), p.zone)
		return float64(t.UnixMilli())
	})
}

var (
	isoDateOnly = regexp.MustCompile(`^[+-]?\d{4,6}(-\d\d(-\d\d)?)?$`)
	isoDateTime = regexp.MustCompile(`^[+-]?\d{4,6}(-\d\d(-\d\d)?)?T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$`)
	zoneMarker  = regexp.MustCompile(`(?i)(Z|\bGMT|\bUTC?\b|[+-]\d\d:?\d\d\b|\b[ECMP][SD]T\b)`)
)

// isLocalDateString reports whether goja reads the date string s in local time: an ISO
// date-time without a zone, or another form naming no zone. ISO dates alone are UTC.
func isLocalDateString(s string) bool {
	if isoDateOnly.MatchString(s) {
		return false
	}
	if m := isoDateTime.FindStringSubmatch(s); m != nil {
		return m[len(m)-1] == ""
	}
	return !zoneMarker.MatchString(s)
}

type timerQueue []*timer

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].due != q[j].due {
		return q[i].due < q[j].due
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *timerQueue) Push(x any) {
	tm := x.(*timer)
	tm.index = len(*q)
	*q = append(*q, tm)
}
func (q *timerQueue) Pop() any {
	old := *q
	tm := old[len(old)-1]
	*q = old[:len(old)-1]
	return tm
}
