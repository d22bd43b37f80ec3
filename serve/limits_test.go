package serve_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scripthost/scripthost/serve"
)

// startLimited serves a handler answering "ok" on a loopback port with limits l.
func startLimited(t *testing.T, l serve.Limits) string {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv, ln := serve.HTTPServer(h, tcp, l)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return tcp.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// get sends a keep-alive request on c and reads the answer.
func get(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("got %q, want ok", b)
	}
}

// closedWithin reports whether the server closes c within limit: a read returns the
// end of the stream (or a reset) rather than timing out on our side.
func closedWithin(c net.Conn, r *bufio.Reader, limit time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(limit))
	for {
		if _, err := r.ReadByte(); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout()) && !errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}

// TestIdleConnectionClosed: a keep-alive connection that sends no further request is
// closed once the idle timeout has passed, not held open.
func TestIdleConnectionClosed(t *testing.T) {
	addr := startLimited(t, serve.Limits{IdleTimeout: 200 * time.Millisecond})
	c := dial(t, addr)
	r := bufio.NewReader(c)
	get(t, c, r)
	if !closedWithin(c, r, 10*time.Second) {
		t.Fatal("the idle connection was still open after 10s, want it closed after 200ms")
	}
}

// TestSlowHeadersCutOff: a client that sends its headers a byte at a time (slowloris)
// is cut off after the header timeout, however long it keeps trickling.
func TestSlowHeadersCutOff(t *testing.T) {
	addr := startLimited(t, serve.Limits{ReadHeaderTimeout: 300 * time.Millisecond})
	c := dial(t, addr)
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := io.WriteString(c, "X"); err != nil {
					return
				}
			}
		}
	}()
	if !closedWithin(c, r, 10*time.Second) {
		t.Fatal("the slow client still held its connection after 10s, want it cut off after 300ms")
	}
}

// TestConnectionCap: with a cap of 2, a third connection is not served while two are
// open, and is served as soon as one of them closes.
func TestConnectionCap(t *testing.T) {
	addr := startLimited(t, serve.Limits{MaxConns: 2, ReadHeaderTimeout: time.Minute, IdleTimeout: time.Minute})
	first, second := dial(t, addr), dial(t, addr)
	get(t, first, bufio.NewReader(first))
	get(t, second, bufio.NewReader(second))
	third := dial(t, addr)
	r := bufio.NewReader(third)
	if _, err := io.WriteString(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	third.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := r.ReadByte(); err == nil {
		t.Fatal("the third connection was served while two were open, want it to wait")
	}
	first.Close()
	third.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the third connection after one closed: %v, want it served", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), "ok") {
		t.Errorf("got %q, want ok", b)
	}
}

// TestDefaultLimits: a zero Limits takes every default, and the defaults bound every
// way a client could hold the server.
func TestDefaultLimits(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	srv, _ := serve.HTTPServer(http.NotFoundHandler(), tcp, serve.Limits{})
	d := serve.DefaultLimits
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"ReadHeaderTimeout", srv.ReadHeaderTimeout, d.ReadHeaderTimeout},
		{"ReadTimeout", srv.ReadTimeout, d.ReadTimeout},
		{"WriteTimeout", srv.WriteTimeout, d.WriteTimeout},
		{"IdleTimeout", srv.IdleTimeout, d.IdleTimeout},
	} {
		if tc.got <= 0 || tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if srv.MaxHeaderBytes != d.MaxHeaderBytes || d.MaxHeaderBytes <= 0 || d.MaxConns <= 0 {
		t.Errorf("MaxHeaderBytes: got %d (default %d), MaxConns default %d, want positive", srv.MaxHeaderBytes, d.MaxHeaderBytes, d.MaxConns)
	}
}
