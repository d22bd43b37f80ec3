// This file is part of the scripthost patch (see Runtime.SetMaxStringLength): the
// helpers that keep the strings a script builds within the maximum string length, and
// that copy long strings in pieces.

package goja

import (
	"math"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// copyChunk is the most a single copy of string data moves at once. (scripthost
// patch.) The runtime's memmove cannot be preempted, and the garbage collector must
// stop a goroutine to scan its stack: a goroutine copying tens of megabytes in one
// call keeps every goroutine that is helping the collector (any goroutine allocating
// during a mark phase) spinning until the copy ends. Copying in chunks keeps that
// wait short whatever a script concatenates.
const copyChunk = 256 << 10

// concatASCII returns a + b, copied in chunks when it is long.
func concatASCII(a, b string) string {
	if len(a)+len(b) <= copyChunk {
		return a + b
	}
	var sb strings.Builder
	sb.Grow(len(a) + len(b))
	writeChunked(&sb, a)
	writeChunked(&sb, b)
	return sb.String()
}

// writeChunked writes s to sb in chunks of at most copyChunk bytes.
func writeChunked(sb *strings.Builder, s string) {
	for len(s) > copyChunk {
		sb.WriteString(s[:copyChunk])
		s = s[copyChunk:]
	}
	sb.WriteString(s)
}

// copyUTF16 is copy(dst, src) in chunks of at most copyChunk bytes.
func copyUTF16(dst, src []uint16) int {
	n := 0
	for len(src) > copyChunk/2 && len(dst) > copyChunk/2 {
		c := copy(dst, src[:copyChunk/2])
		dst, src, n = dst[c:], src[c:], n+c
	}
	return n + copy(dst, src)
}

// utf16Length is the length of s in UTF-16 code units. (scripthost patch.)
func utf16Length(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// checkStringLength64 is vm.checkStringLength for a length computed in int64.
// (scripthost patch.)
func (r *Runtime) checkStringLength64(length int64) {
	if m := r.vm.maxStringLength; m > 0 && length > int64(m) {
		r.vm.checkStringLength(int(min(length, math.MaxInt)))
	}
}

// normalizeChunk is how much of a string normalize converts at a time.
const normalizeChunk = 64 << 10

// normalize returns f(s), refusing it once it grows past the maximum string length:
// a compatibility decomposition can make a string eighteen times longer. The string
// is normalized a chunk at a time, cut at boundaries where normalization starts
// afresh. (scripthost patch: see Runtime.SetMaxStringLength.)
func (r *Runtime) normalize(f norm.Form, s string) Value {
	if r.vm.maxStringLength <= 0 || len(s) <= normalizeChunk {
		return newStringValue(f.String(s))
	}
	sb := StringBuilder{limit: r.vm}
	for len(s) > 0 {
		end := len(s)
		if end > normalizeChunk {
			if b := f.FirstBoundaryInString(s[normalizeChunk:]); b >= 0 {
				end = normalizeChunk + b
			}
		}
		sb.WriteUTF8String(f.String(s[:end]))
		s = s[end:]
	}
	return sb.String()
}
