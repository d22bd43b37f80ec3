package js

import (
	_ "embed"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dop251/goja"

	"github.com/scripthost/scripthost/sandbox"
)

// The web platform is the set of WinterCG globals scripts see beside the ECMAScript
// built-ins: URL and URLSearchParams, TextEncoder and TextDecoder, atob and btoa,
// structuredClone, crypto (getRandomValues, randomUUID, subtle digest and HMAC),
// timers and queueMicrotask, performance.now, Intl.NumberFormat and
// Intl.DateTimeFormat, and toLocaleString. platform.js defines them; its globals are
// goja lazy globals, so platform.js runs the first time a script touches one of them
// (or a locale method), and the Go half (platform_*.go) is built the first time
// platform.js needs it. A script that uses none of it pays for none of it.
//
// In deterministic mode every outside influence is fixed: random bytes and UUIDs come
// from a generator seeded with the invocation's seed, timers run on a virtual clock
// that starts at Determinism.Now and jumps to the next due timer, the default time
// zone is Determinism.TimeZone and the default locale is always en-US.

//go:embed platform.js
var platformSource string

var platformProgram = goja.MustCompile("<platform>", platformSource, true)

// platformGlobals are the globals platform.js makes, and consoleGlobal helpers.go's;
// lazyGlobals adds them to goja's built-ins, built on first use.
var (
	platformGlobals = []string{"DOMException", "btoa", "atob", "TextEncoder", "TextDecoder", "URL",
		"URLSearchParams", "structuredClone", "crypto", "CryptoKey", "setTimeout", "setInterval",
		"clearTimeout", "clearInterval", "queueMicrotask", "performance", "Intl"}
	lazyGlobals = goja.NewLazyGlobals(append([]string{consoleGlobal}, platformGlobals...)...)
)

const consoleGlobal = "console"

// localeKeys maps the locale methods goja hands to the sandbox to their
// implementations in platform.js's locale table.
var localeKeys = map[string]string{
	"Number.prototype.toLocaleString":   "number",
	"Date.prototype.toLocaleString":     "toLocaleString",
	"Date.prototype.toLocaleDateString": "toLocaleDateString",
	"Date.prototype.toLocaleTimeString": "toLocaleTimeString",
}

// platform is the per-instance state of the web platform.
type platform struct {
	in  *instance
	det *sandbox.Determinism
	// zone is the time zone of Date's local time and Intl's default; nil means the
	// process's.
	zone *time.Location
	// rng is the deterministic source of random bytes; nil means crypto/rand.
	rng *rand.ChaCha8

	domException, typeError, rangeError *goja.Object

	timers timers

	// exports is what platform.js returned, once it ran: makers, locale, zone.
	exports *goja.Object
}

// installPlatform prepares the web platform of in's runtime: the globals themselves
// are lazy (see lazyGlobals and global), and the locale methods of Number and Date
// run platform.js on their first call. It is the one place the
// platform is installed; det is the invocation's deterministic settings (nil outside
// deterministic mode) and zone the time zone Date's local time uses (nil for the
// process's), in which case platform.js runs now, before the module.
func (in *instance) installPlatform(det *sandbox.Determinism, zone *time.Location) error {
	p := &platform{in: in, det: det, zone: zone}
	in.platform = p
	p.timers.init(p)
	if det != nil {
		var seed [32]byte
		for i := range 8 {
			seed[i] = byte(uint64(det.Seed) >> (8 * i))
		}
		copy(seed[8:], "scripthost/web-platform/crypto")
		p.rng = rand.NewChaCha8(seed)
		// Date.now follows the virtual clock, which timers advance.
		start := det.Now
		in.vm.SetTimeSource(func() time.Time { return start.Add(p.timers.virtual) })
	}
	vm := in.vm
	vm.SetLocaleMethods(func(method string, call goja.FunctionCall) goja.Value {
		impl, _ := goja.AssertFunction(p.load().Get("locale").ToObject(vm).Get(localeKeys[method]))
		v, err := impl(goja.Undefined(), call.This, call.Argument(0), call.Argument(1))
		if err != nil {
			panic(err)
		}
		return v
	})
	if zone != nil && det != nil {
		zoneFn, _ := goja.AssertFunction(p.load().Get("zone"))
		if _, err := zoneFn(goja.Undefined()); err != nil {
			return fmt.Errorf("sandbox/js: platform: %w", err)
		}
	}
	return nil
}

// load runs platform.js the first time it is called and returns what it returned. A
// failure is a bug of platform.js, thrown into the calling script.
func (p *platform) load() *goja.Object {
	if p.exports != nil {
		return p.exports
	}
	in, vm := p.in, p.in.vm
	lim := vm.NewObject()
	_ = lim.Set("memoryBytes", in.lim.MemoryBytes)
	_ = lim.Set("maxElems", in.lim.MemoryBytes/bytesPerElement)
	_ = lim.Set("maxChars", in.lim.MemoryBytes/bytesPerChar)
	_ = lim.Set("zone", p.zone != nil && p.det != nil)
	_ = lim.Set("abort", func(kind, detail string) {
		in.abort(&sandbox.LimitError{Limit: kind, Detail: detail})
	})
	fv, err := vm.RunProgram(platformProgram)
	if err != nil {
		panic(vm.NewGoError(fmt.Errorf("sandbox/js: platform: %w", err)))
	}
	f, _ := goja.AssertFunction(fv)
	ev, err := f(goja.Undefined(), vm.ToValue(p.native), lim)
	if err != nil {
		panic(vm.NewGoError(fmt.Errorf("sandbox/js: platform: %w", err)))
	}
	p.exports = ev.ToObject(vm)
	return p.exports
}

// global builds the platform global name (a lazy global).
func (p *platform) global(name string) goja.Value {
	mk, _ := goja.AssertFunction(p.load().Get("makers").ToObject(p.in.vm).Get(name))
	if mk == nil {
		panic(p.in.vm.NewTypeError("sandbox/js: platform.js makes no global " + name))
	}
	v, err := mk(goja.Undefined())
	if err != nil {
		panic(err)
	}
	return v
}

// native builds the table of Go functions platform.js calls. It runs once per
// instance, on the first use of a global that needs Go.
func (p *platform) native(domException, typeError, rangeError *goja.Object) *goja.Object {
	p.domException, p.typeError, p.rangeError = domException, typeError, rangeError
	vm := p.in.vm
	o := vm.NewObject()
	set := func(name string, fn any) { _ = o.Set(name, fn) }
	p.installText(set)
	p.installURL(set)
	p.installCrypto(set)
	p.installTimers(set)
	p.installIntl(set)
	return o
}

// throw panics with a new error made by ctor: goja turns the panic into a JavaScript
// exception of the calling script.
func (p *platform) throw(ctor *goja.Object, msg string) {
	obj, err := p.in.vm.New(ctor, p.in.vm.ToValue(msg))
	if err != nil {
		panic(p.in.vm.NewTypeError(msg))
	}
	panic(obj)
}

func (p *platform) throwType(format string, args ...any) {
	p.throw(p.typeError, fmt.Sprintf(format, args...))
}

func (p *platform) throwRange(format string, args ...any) {
	p.throw(p.rangeError, fmt.Sprintf(format, args...))
}

// throwDOM throws a DOMException named name.
func (p *platform) throwDOM(name, format string, args ...any) {
	vm := p.in.vm
	obj, err := vm.New(p.domException, vm.ToValue(fmt.Sprintf(format, args...)), vm.ToValue(name))
	if err != nil {
		panic(vm.NewTypeError(fmt.Sprintf(format, args...)))
	}
	panic(obj)
}

// bytesOf returns the bytes of a Uint8Array platform.js passed, sharing its memory.
func (p *platform) bytesOf(v goja.Value) []byte {
	b, ok := v.Export().([]byte)
	if !ok {
		p.throwType("expected a Uint8Array, got %s", v.String())
	}
	return b
}

// buffer returns b as a new ArrayBuffer.
func (p *platform) buffer(b []byte) goja.Value {
	p.in.vm.Charge(int64(len(b))) // the bytes count against the budget as goja's own buffers do
	return p.in.vm.ToValue(p.in.vm.NewArrayBuffer(b))
}
