package wasm

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kernel interfaces written-page tracking uses (Linux 6.7 and later): a
// userfaultfd whose write protection is resolved by the kernel itself
// (UFFD_FEATURE_WP_ASYNC), so that a write to a protected page only marks it written,
// and the PAGEMAP_SCAN ioctl of /proc/self/pagemap, which lists the written pages of
// a range and can protect them again. From linux/userfaultfd.h and linux/fs.h;
// x/sys/unix does not define them.
const (
	uffdUserModeOnly     = 1    // UFFD_USER_MODE_ONLY, a flag of userfaultfd(2)
	uffdAPI              = 0xAA // UFFD_API
	uffdioAPI            = 0xC018AA3F
	uffdioRegister       = 0xC020AA00
	uffdioWriteprotect   = 0xC018AA06
	uffdFeatureWPUnpop   = 1 << 13 // UFFD_FEATURE_WP_UNPOPULATED: pages never touched are protected too
	uffdFeatureWPAsync   = 1 << 15 // UFFD_FEATURE_WP_ASYNC
	uffdRegisterModeWP   = 1 << 1  // UFFDIO_REGISTER_MODE_WP
	uffdWriteprotectWP   = 1 << 0  // UFFDIO_WRITEPROTECT_MODE_WP
	pagemapScan          = 0xC0606610
	pageIsWritten        = 1 << 1 // PAGE_IS_WRITTEN
	pmScanWPMatching     = 1 << 0 // PM_SCAN_WP_MATCHING: protect the pages reported
	pmScanCheckWPAsync   = 1 << 1 // PM_SCAN_CHECK_WPASYNC: fail on a page not tracked
	pageRegionsPerScan   = 64
	trackingUnsupported  = "written-page tracking unavailable"
	trackingProbePages   = 4
	trackingProbeWritten = 2
)

// osPageSize is the kernel's page, the unit the tracker reports in (4 KiB on amd64,
// 4, 16 or 64 KiB on arm64).
var osPageSize = os.Getpagesize()

type uffdioAPIArg struct{ api, features, ioctls uint64 }

type uffdioRange struct{ start, len uint64 }

type uffdioRegisterArg struct {
	rng          uffdioRange
	mode, ioctls uint64
}

type uffdioWriteprotectArg struct {
	rng  uffdioRange
	mode uint64
}

type pmScanArg struct {
	size, flags, start, end, walkEnd, vec, vecLen, maxPages   uint64
	categoryInverted, categoryMask, categoryAnyof, returnMask uint64
}

type pageRegion struct{ start, end, categories uint64 }

// pageTracker finds the pages of a mapping written since it last looked. One serves
// the process: its userfaultfd holds the registrations of every tracked memory, each
// dropped by the kernel when its memory is unmapped.
type pageTracker struct {
	uffd    int
	pagemap *os.File
}

var (
	trackerOnce sync.Once
	theTracker  *pageTracker
	trackerErr  error
)

// tracker returns the process's page tracker, or nil and why when the kernel (older
// than 6.7, or a seccomp policy refusing userfaultfd) does not offer one: memories are
// then reset by copying all of them.
func tracker() (*pageTracker, error) {
	trackerOnce.Do(func() { theTracker, trackerErr = newPageTracker() })
	return theTracker, trackerErr
}

func newPageTracker() (_ *pageTracker, err error) {
	fd, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK|uffdUserModeOnly, 0, 0)
	if errno != 0 {
		return nil, fmt.Errorf("%s: userfaultfd: %w", trackingUnsupported, errno)
	}
	t := &pageTracker{uffd: int(fd)}
	defer func() {
		if err != nil {
			if t.pagemap != nil {
				t.pagemap.Close()
			}
			unix.Close(t.uffd)
			err = fmt.Errorf("%s: %w", trackingUnsupported, err)
		}
	}()
	api := uffdioAPIArg{api: uffdAPI, features: uffdFeatureWPAsync | uffdFeatureWPUnpop}
	if err := ioctl(t.uffd, uffdioAPI, unsafe.Pointer(&api)); err != nil {
		return nil, fmt.Errorf("asynchronous write protection: %w", err)
	}
	if t.pagemap, err = os.Open("/proc/self/pagemap"); err != nil {
		return nil, err
	}
	if err := t.probe(); err != nil {
		return nil, err
	}
	return t, nil
}

// probe tracks a small mapping, writes one of its pages and checks that exactly that
// page is reported, then not again: a kernel whose ioctls accept the calls but answer
// otherwise is not used.
func (t *pageTracker) probe() error {
	m, err := mapMemory(trackingProbePages * osPageSize)
	if err != nil {
		return err
	}
	defer unmapMemory(m)
	if err := t.track(m); err != nil {
		return err
	}
	m[trackingProbeWritten*osPageSize+1] = 1
	var got [][2]int
	collect := func(off, end int) { got = append(got, [2]int{off, end}) }
	if err := t.written(m, collect); err != nil {
		return err
	}
	want := [2]int{trackingProbeWritten * osPageSize, (trackingProbeWritten + 1) * osPageSize}
	if len(got) != 1 || got[0] != want {
		return fmt.Errorf("PAGEMAP_SCAN reported %v after a write to bytes %v", got, want)
	}
	got = nil
	if err := t.written(m, collect); err != nil {
		return err
	}
	if len(got) != 0 {
		return fmt.Errorf("PAGEMAP_SCAN reported %v again after protecting it", got)
	}
	return nil
}

// track write-protects all of b, a mapping of mapMemory, so that written reports the
// pages written from now on.
func (t *pageTracker) track(b []byte) error {
	rng := uffdioRange{start: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), len: uint64(len(b))}
	reg := uffdioRegisterArg{rng: rng, mode: uffdRegisterModeWP}
	if err := ioctl(t.uffd, uffdioRegister, unsafe.Pointer(&reg)); err != nil {
		return fmt.Errorf("register %d bytes for write tracking: %w", len(b), err)
	}
	wp := uffdioWriteprotectArg{rng: rng, mode: uffdWriteprotectWP}
	if err := ioctl(t.uffd, uffdioWriteprotect, unsafe.Pointer(&wp)); err != nil {
		return fmt.Errorf("write-protect %d bytes: %w", len(b), err)
	}
	return nil
}

// written calls fn with the byte range [off, end) of every run of pages of b written
// since track or the previous written, then protects them again: what fn writes to
// them is not reported next time.
func (t *pageTracker) written(b []byte, fn func(off, end int)) error {
	if err := t.scan(b, 0, fn); err != nil {
		return err
	}
	return t.scan(b, pmScanWPMatching, nil)
}

// scan calls fn, if not nil, with the byte range [off, end) of every run of written
// pages of b, and with flags pmScanWPMatching protects them again.
func (t *pageTracker) scan(b []byte, flags uint64, fn func(off, end int)) error {
	base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	end := base + uint64(len(b))
	// The kernel writes the regions through an address the compiler does not see as
	// a pointer: they live on the heap (the pool's), where it cannot assume that an
	// opaque call left them unchanged, and are kept alive past the call.
	var vec []pageRegion
	if fn != nil {
		buf := regionBufs.Get().(*[pageRegionsPerScan]pageRegion)
		defer regionBufs.Put(buf)
		vec = buf[:]
	}
	for start := base; start < end; {
		arg := pmScanArg{
			size: uint64(unsafe.Sizeof(pmScanArg{})), flags: flags | pmScanCheckWPAsync,
			start: start, end: end, categoryMask: pageIsWritten, returnMask: pageIsWritten,
		}
		if fn != nil {
			arg.vec, arg.vecLen = uint64(uintptr(unsafe.Pointer(&vec[0]))), uint64(len(vec))
		}
		n, _, errno := unix.Syscall(unix.SYS_IOCTL, t.pagemap.Fd(), pagemapScan, uintptr(unsafe.Pointer(&arg)))
		if errno != 0 {
			return fmt.Errorf("PAGEMAP_SCAN: %w", errno)
		}
		runtime.KeepAlive(vec)
		for _, r := range vec[:n] {
			fn(int(r.start-base), int(r.end-base))
		}
		if arg.walkEnd <= start {
			return errors.New("PAGEMAP_SCAN: the scan did not advance")
		}
		start = arg.walkEnd
	}
	return nil
}

var regionBufs = sync.Pool{New: func() any { return new([pageRegionsPerScan]pageRegion) }}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// mapMemory maps size bytes of zeroed memory of the process's own, outside the Go
// heap, backed by the kernel only where written (MAP_NORESERVE) and in 4 KiB pages
// (no transparent huge pages, which would make one write a 2 MiB page's).
func mapMemory(size int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", size, err)
	}
	_ = unix.Madvise(b, unix.MADV_NOHUGEPAGE)
	return b, nil
}

func unmapMemory(b []byte) { _ = unix.Munmap(b) }
