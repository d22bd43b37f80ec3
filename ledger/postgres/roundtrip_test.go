package postgres_test

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/scripthost/scripthost/internal/pgtest"
	"github.com/scripthost/scripthost/ledger"
	"github.com/scripthost/scripthost/ledger/postgres"
)

// roundTrips is a loopback TCP proxy between a store and its server that counts the
// round trips the store makes: each time the client sends after the server last
// answered. However the bytes are split into segments, messages sent together
// before reading the answer are one round trip.
type roundTrips struct {
	mu     sync.Mutex
	n      int
	answer bool // the server spoke last
}

func (r *roundTrips) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *roundTrips) saw(client bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if client && r.answer {
		r.n++
	}
	r.answer = !client
}

// proxy starts the proxy to the server of dsn and returns the URL through it.
func (r *roundTrips) proxy(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	server := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r.answer = true
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", server)
			if err != nil {
				c.Close()
				continue
			}
			go r.pipe(c, s, true)
			go r.pipe(s, c, false)
		}
	}()
	u.Host = ln.Addr().String()
	return u.String()
}

func (r *roundTrips) pipe(from, to net.Conn, client bool) {
	defer from.Close()
	defer to.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			r.saw(client)
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection
			return
		}
	}
}

// TestRoundTrips: an in-flight record costs two round trips (BEGIN with its one write
// statement, then COMMIT) and an outcome one (its write, alone): no read, no
// statement of its own for a setting. The server still counts the BEGIN.
func TestRoundTrips(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound, not a measure
	defer cancel()
	var rt roundTrips
	url := pgtest.NewServer(t).URL(t) // its own: the test reads the server's statement counts
	s := open(t, rt.proxy(t, url), postgres.Options{MaxConns: 1})
	begin := func(hash string) ledger.NewMutation {
		return ledger.NewMutation{Namespace: "Shop", Method: "ship", Params: json.RawMessage(`{}`), InputHash: hash}
	}
	// The connection's first use of each statement prepares it (a round trip of its
	// own): these are not counted.
	for _, h := range []string{"warm-1", "warm-2"} {
		m, err := s.BeginMutation(ctx, begin(h))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}

	// The server counts what went in the round trips: BEGIN too, though it was not a
	// round trip of its own. (Counted apart: the pool pings a connection idle for a
	// second, as it may be after the meter starts.)
	meter := pgtest.StartMeter(t, url)
	if _, err := s.BeginMutation(ctx, begin("metered")); err != nil {
		t.Fatal(err)
	}
	if c := meter.Stop(t); c.Statements != 3 || c.Begins != 1 {
		t.Errorf("the server counted %d statements and %d BEGIN, want 3 (BEGIN, the write, COMMIT) and 1", c.Statements, c.Begins)
	}

	n0 := rt.count()
	m, err := s.BeginMutation(ctx, begin("counted"))
	if err != nil {
		t.Fatal(err)
	}
	if n := rt.count() - n0; n != 2 {
		t.Errorf("the in-flight record made %d round trips, want 2: BEGIN with the write, then COMMIT", n)
	}
	n0 = rt.count()
	if _, err := s.ApplyMutation(ctx, m.ID, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if n := rt.count() - n0; n != 1 {
		t.Errorf("the outcome made %d round trips, want 1: its write alone", n)
	}
}
