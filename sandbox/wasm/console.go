package wasm

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/scripthost/scripthost/sandbox"
)

// console collects the lines a guest writes through log and through WASI stdout
// (level log) and stderr (level error). Past max bytes of text it keeps the part of the
// line that fits, adds one marker line and drops the rest: the invocation goes on.
type console struct {
	lines     []sandbox.ConsoleLine
	bytes     int
	max       int
	truncated bool
	// head keeps the first bytes written to stderr, even past the cap: a guest
	// runtime's fatal message is read from it.
	head []byte
}

const stderrHead = 4 << 10

func (c *console) add(level, text string) {
	if c.truncated {
		return
	}
	if c.bytes+len(text) <= c.max {
		c.bytes += len(text)
		c.lines = append(c.lines, sandbox.ConsoleLine{Level: level, Text: text})
		return
	}
	if keep := c.max - c.bytes; keep > 0 {
		cut := keep
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		c.bytes += cut
		c.lines = append(c.lines, sandbox.ConsoleLine{Level: level, Text: text[:cut]})
	}
	c.truncated = true
	c.lines = append(c.lines, sandbox.ConsoleLine{Level: "warn",
		Text: fmt.Sprintf("[console output truncated at %d bytes]", c.max)})
}

// stream is a WASI file descriptor (stdout or stderr) writing lines to the console.
type stream struct {
	c       *console
	level   string
	pending []byte
	keep    bool // keep a tail of everything written (stderr)
}

func (s *stream) Write(p []byte) (int, error) {
	n := len(p)
	if s.keep {
		if room := stderrHead - len(s.c.head); room > 0 {
			s.c.head = append(s.c.head, p[:min(room, len(p))]...)
		}
	}
	if s.c.truncated {
		return n, nil
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			// An endless line is flushed once it alone fills the console, so the
			// pending buffer stays bounded.
			room := s.c.max + 1 - len(s.pending)
			if room <= 0 {
				s.flush()
				continue
			}
			if len(p) > room {
				s.pending = append(s.pending, p[:room]...)
				p = p[room:]
				continue
			}
			s.pending = append(s.pending, p...)
			break
		}
		s.pending = append(s.pending, p[:i]...)
		s.flush()
		p = p[i+1:]
	}
	return n, nil
}

func (s *stream) flush() {
	if len(s.pending) > 0 {
		s.c.add(s.level, string(s.pending))
		s.pending = s.pending[:0]
	}
}
