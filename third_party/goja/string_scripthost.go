// This file is part of the scripthost patch (see Runtime.SetMaxStringLength): the
// helpers that keep the strings a script builds within the maximum string length.

package goja

import (
	"math"

	"golang.org/x/text/unicode/norm"
)

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
