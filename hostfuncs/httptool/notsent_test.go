package httptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/hostfuncs"
)

const sendDecl = `
- namespace: Svc
  method: charge
  url: "%URL%/charges/{customer}"
  timeout: 500ms
`

// closedPort returns the address of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// rawServer accepts connections on loopback and hands each to serve; it counts the
// connections it accepted.
func rawServer(t *testing.T, serve func(net.Conn)) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String(), &accepted
}

// readRequest reads one HTTP request with its body from c.
func readRequest(c net.Conn) error {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err
}

// reset closes c with a TCP reset instead of an orderly close.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// TestTransportFailureClassified: a mutation's transport failure is "never sent" (a
// definite not-applied, sent again under the same key) only when nothing of the
// request can have reached the service: no connection (refused, a name that does not
// resolve, a TLS handshake refused over a bad certificate). Once the request was
// written, a reset, a close or a timeout leaves the outcome unknown, since a service
// that read it and acted looks the same from here.
func TestTransportFailureClassified(t *testing.T) {
	var tlsHits atomic.Int32
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tlsHits.Add(1)
	}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsSrv.StartTLS()
	defer tlsSrv.Close()

	closeUnread, _ := rawServer(t, func(c net.Conn) {
		// Long enough for the client's request to be in this socket's buffer: it was
		// written, and is dropped unread.
		time.Sleep(100 * time.Millisecond)
		reset(c)
	})
	readReset, _ := rawServer(t, func(c net.Conn) {
		readRequest(c)
		reset(c)
	})
	readClose, _ := rawServer(t, func(c net.Conn) {
		readRequest(c)
		c.Close()
	})
	hang, _ := rawServer(t, func(c net.Conn) {
		readRequest(c)
		time.Sleep(2 * time.Second)
		c.Close()
	})

	tests := []struct {
		name    string
		base    string
		notSent bool
		code    string
	}{
		{"connection refused", "http://" + closedPort(t), true, ""},
		{"name does not resolve", "http://scripthost-test.invalid", true, ""},
		{"bad certificate", tlsSrv.URL, true, ""},
		{"accepted, closed unread", "http://" + closeUnread, false, ""},
		{"read, then reset", "http://" + readReset, false, ""},
		{"read, then closed", "http://" + readClose, false, ""},
		{"read, then hangs", "http://" + hang, false, scripthost.CodeTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := loadTools(t, tt.base, sendDecl)["Svc.charge"]
			ctx := hostfuncs.WithIdempotencyKey(context.Background(), "key-1")
			_, err := tool.Execute(ctx, json.RawMessage(`{"customer":"cus_1","amount":1}`))
			if !scripthost.IsNetwork(err) {
				t.Fatalf("got %v, want a network error", err)
			}
			if got := hostfuncs.IsNotSent(err); got != tt.notSent {
				t.Errorf("never sent: got %v, want %v (%v)", got, tt.notSent, err)
			}
			if got := strings.Contains(err.Error(), "never sent"); got != tt.notSent {
				t.Errorf("message says never sent: got %v, want %v (%v)", got, tt.notSent, err)
			}
			var e *scripthost.Error
			if errors.As(err, &e); tt.code != "" && e.Code != tt.code {
				t.Errorf("code: got %q, want %q", e.Code, tt.code)
			}
		})
	}
	if n := tlsHits.Load(); n != 0 {
		t.Errorf("TLS server handled %d requests, want 0", n)
	}
}

// TestReadNotSentToo: a read over the pooled client is classified the same way when
// no connection was made.
func TestReadNotSentToo(t *testing.T) {
	tool := loadTools(t, "http://"+closedPort(t), `
- namespace: Svc
  method: get
  read_only: true
  url: "%URL%/customers/{id}"
  timeout: 500ms
`)["Svc.get"]
	_, err := tool.Execute(context.Background(), json.RawMessage(`{"id":"cus_1"}`))
	if !scripthost.IsNetwork(err) || !hostfuncs.IsNotSent(err) {
		t.Errorf("got %v, want a network error, never sent", err)
	}
}
