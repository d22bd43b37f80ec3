package hostproc

import (
	"os"
	"strconv"
	"strings"
)

// Memory returns the process's resident memory now and at its peak (VmRSS and VmHWM
// of /proc/self/status), in bytes; ok is false where the system does not say (not
// Linux).
func Memory() (rss, peak int64, ok bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, false
	}
	var seen int
	for line := range strings.SplitSeq(string(b), "\n") {
		name, rest, found := strings.Cut(line, ":")
		if !found || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
		seen++
	}
	return rss, peak, seen == 2
}

// ResetPeak sets the process's peak resident memory back to what it holds now, so
// that Memory's peak covers what runs next; it reports whether the system allowed it
// (Linux, /proc/self/clear_refs).
func ResetPeak() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
