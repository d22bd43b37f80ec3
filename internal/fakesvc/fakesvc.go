// Package fakesvc is a real HTTP service on loopback for tests of mutations: it applies
// requests keyed by their Idempotency-Key, counts every apply, and can be told to
// succeed, refuse, fail before applying, or apply and then never answer or drop the
// connection; it answers reconcile look-ups truthfully or as told.
//
// Endpoints:
//   - POST, PUT, PATCH, DELETE on any path: a mutation. It is applied (or not) as the
//     behaviour in force says; a successful answer is 200 with
//     {"id", "key", "path", "input"}.
//   - GET with the query parameter idempotency_key: a reconcile look-up. 200 with the
//     stored answer when the key was applied, 404 when it was not, or as told.
//   - any other GET: a read, 200 with {"path", "query"}.
//
// The service does not deduplicate by key unless told to (SetDedupe): a client that
// sends one logical mutation twice shows up as two applies. Told to, it keeps keys the
// way Stripe and the IETF Idempotency-Key draft do: a repeated request gets the stored
// answer, a request while the first is still under way gets 409, and a request reusing
// a key with another method, path or body gets 422.
package fakesvc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// Behavior is how the service answers a mutation request.
type Behavior string

// Behaviours.
const (
	// Succeed applies and answers 200.
	Succeed Behavior = "succeed"
	// Fail4xx answers 422 without applying.
	Fail4xx Behavior = "fail_4xx"
	// Fail5xx answers 503 without applying.
	Fail5xx Behavior = "fail_5xx"
	// ApplyTimeout applies, then does not answer until the client gives up.
	ApplyTimeout Behavior = "apply_timeout"
	// ApplyDrop applies, then closes the connection without an answer.
	ApplyDrop Behavior = "apply_drop"
	// Unauthorized answers 401 without applying.
	Unauthorized Behavior = "unauthorized"
	// Forbidden answers 403 without applying.
	Forbidden Behavior = "forbidden"
	// Hold takes the request's key as under way and applies only when Release is
	// called, whether or not the client is still waiting; it answers if it is.
	Hold Behavior = "hold"
	// KeyReused answers 422 as a service that saw the key with other parameters.
	KeyReused Behavior = "key_reused"
)

// Behaviors lists the mutation behaviours, for outcome matrices.
var Behaviors = []Behavior{Succeed, Fail4xx, Fail5xx, ApplyTimeout, ApplyDrop, Unauthorized, Forbidden, KeyReused}

// ReconcileBehavior is how the service answers a reconcile look-up.
type ReconcileBehavior string

// Reconcile behaviours.
const (
	// ReconcileTruth answers 200 with the stored answer when the key was applied and
	// 404 when it was not.
	ReconcileTruth ReconcileBehavior = "truth"
	// ReconcileApplied answers 200 whatever happened.
	ReconcileApplied ReconcileBehavior = "applied"
	// ReconcileNotFound answers 404 whatever happened.
	ReconcileNotFound ReconcileBehavior = "not_found"
	// ReconcileError answers 500.
	ReconcileError ReconcileBehavior = "error"
)

// BehaviorHeader, when a request carries it, overrides every other setting for that
// request.
const BehaviorHeader = "X-Fakesvc-Behavior"

// maxHang bounds an ApplyTimeout request whose client never gives up.
const maxHang = 30 * time.Second

// Request is what the service saw of one request.
type Request struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Server is the fake service.
type Server struct {
	srv  *httptest.Server
	done chan struct{}

	mu        sync.Mutex
	def       Behavior
	next      []Behavior
	perKey    map[string]Behavior
	reconcile ReconcileBehavior
	dedupe    bool
	latency   time.Duration
	applies   map[string]int
	answers   map[string][]byte
	prints    map[string]string // key → method, path and body of its first request
	underWay  map[string]bool   // keys whose first request is being processed
	release   chan struct{}     // closed by Release
	released  bool
	total     int
	requests  []Request
	changed   chan struct{} // closed and replaced on every apply
}

// New starts a service on a loopback port. Close it when done.
func New() *Server {
	s := newServer()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Listen starts a service on addr ("127.0.0.1:8787"), for running examples against it
// by hand. Close it when done.
func Listen(addr string) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakesvc: %w", err)
	}
	s := newServer()
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	s.srv.Start()
	return s, nil
}

func newServer() *Server {
	return &Server{
		done:      make(chan struct{}),
		def:       Succeed,
		perKey:    map[string]Behavior{},
		reconcile: ReconcileTruth,
		applies:   map[string]int{},
		answers:   map[string][]byte{},
		prints:    map[string]string{},
		underWay:  map[string]bool{},
		release:   make(chan struct{}),
		changed:   make(chan struct{}),
	}
}

// URL is the service's base URL, "http://127.0.0.1:port".
func (s *Server) URL() string { return s.srv.URL }

// Close stops the service, ending any request it is holding.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetDefault sets the behaviour of mutation requests that nothing else decides.
func (s *Server) SetDefault(b Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = b
}

// Next queues behaviours for the next mutation requests, one each, before any per-key
// setting.
func (s *Server) Next(b ...Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = append(s.next, b...)
}

// SetKey sets the behaviour of every mutation request carrying key.
func (s *Server) SetKey(key string, b Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.perKey[key] = b
}

// SetReconcile sets how reconcile look-ups are answered.
func (s *Server) SetReconcile(b ReconcileBehavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reconcile = b
}

// SetDedupe makes the service honour Idempotency-Key: a request whose key was applied
// gets the stored answer instead of applying again when its method, path and body are
// those of the first, and 422 (error type idempotency_error) when they are not; a
// request whose key is still under way gets 409. Only an applied answer is stored: a
// refusal before applying leaves the key free.
func (s *Server) SetDedupe(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dedupe = on
}

// SetLatency makes every mutation request that would apply wait d before applying and d
// again before answering. A request whose client goes away during the first wait is not
// applied, as a service that commits only while the client is connected; one whose client
// goes away during the second wait is applied and its answer lost. Crash tests use it to
// give a killed client both windows.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// Release lets every request held by Hold apply, now and from now on.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.released {
		s.released = true
		close(s.release)
	}
}

// Applies returns how many times a request with key was applied.
func (s *Server) Applies(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applies[key]
}

// Total returns how many applies the service made, whatever their keys.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// WaitTotal blocks until the service has made at least n applies, or ctx ends. A test
// that kills a client mid-request uses it to know the apply has happened.
func (s *Server) WaitTotal(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		total, changed := s.total, s.changed
		s.mu.Unlock()
		if total >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("fakesvc: waiting for %d applies, have %d: %w", n, total, ctx.Err())
		}
	}
}

// Requests returns every request the service received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()

	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if key := r.URL.Query().Get("idempotency_key"); key != "" {
			s.lookup(w, r, key)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"path": r.URL.Path, "query": r.URL.RawQuery})
	default:
		s.mutate(w, r, body)
	}
}

// behavior picks the behaviour of one mutation request: header, queue, key, default.
func (s *Server) behavior(r *http.Request, key string) Behavior {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := r.Header.Get(BehaviorHeader); b != "" {
		return Behavior(b)
	}
	if len(s.next) > 0 {
		b := s.next[0]
		s.next = s.next[1:]
		return b
	}
	if b, ok := s.perKey[key]; ok {
		return b
	}
	return s.def
}

func (s *Server) mutate(w http.ResponseWriter, r *http.Request, body []byte) {
	key := r.Header.Get("Idempotency-Key")
	b := s.behavior(r, key)
	switch b {
	case Fail4xx:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": "rejected by the service"})
		return
	case Fail5xx:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "service unavailable"})
		return
	case Unauthorized:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "bad credentials"})
		return
	case Forbidden:
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "not allowed"})
		return
	case KeyReused:
		writeKeyError(w, http.StatusUnprocessableEntity, "this key was used with other parameters")
		return
	}
	fp := r.Method + " " + r.URL.Path + "\n" + string(body)
	if status, answer, done := s.begin(key, fp); done {
		if status != http.StatusOK {
			writeKeyError(w, status, string(answer))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.Write(answer)
		return
	}
	defer s.end(key)

	s.mu.Lock()
	latency, release := s.latency, s.release
	s.mu.Unlock()
	if b == Hold {
		select {
		case <-release:
		case <-s.done:
			return
		}
	} else if !s.wait(r, latency) {
		return
	}
	answer := s.apply(key, fp, r.URL.Path, body)
	if !s.wait(r, latency) {
		return
	}
	switch b {
	case ApplyTimeout:
		select {
		case <-r.Context().Done():
		case <-s.done:
		case <-time.After(maxHang):
		}
		return
	case ApplyDrop:
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("fakesvc: response writer cannot hijack")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(answer)
}

// begin checks key before a request is processed. With dedupe on, a key under way is
// answered 409, a key with a stored answer is answered with it (200) when fp
// matches the first request and 422 when not; otherwise the key is marked under way
// until end.
func (s *Server) begin(key, fp string) (int, []byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dedupe || key == "" {
		return 0, nil, false
	}
	if answer, ok := s.answers[key]; ok {
		if s.prints[key] != fp {
			return http.StatusUnprocessableEntity, []byte("this key was used with other parameters"), true
		}
		return http.StatusOK, answer, true
	}
	if s.underWay[key] {
		return http.StatusConflict, []byte("a request with this key is under way"), true
	}
	s.underWay[key] = true
	return 0, nil, false
}

func (s *Server) end(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.underWay, key)
}

// writeKeyError answers with an error about the key, shaped as Stripe's.
func writeKeyError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"type": "idempotency_error", "message": msg}})
}

// wait waits d and reports whether the request's client is still there.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

// apply records one apply of key and returns its answer; the first answer and request
// fingerprint of a key are stored.
func (s *Server) apply(key, fp, path string, body []byte) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total++
	s.applies[key]++
	close(s.changed)
	s.changed = make(chan struct{})
	var input any = string(body)
	var v any
	if json.Unmarshal(body, &v) == nil {
		input = v
	}
	answer, _ := json.Marshal(map[string]any{
		"id":    fmt.Sprintf("obj_%d", s.total),
		"key":   key,
		"path":  path,
		"input": input,
	})
	if _, ok := s.answers[key]; !ok {
		s.answers[key] = answer
		s.prints[key] = fp
	}
	return answer
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request, key string) {
	s.mu.Lock()
	rb := s.reconcile
	answer, applied := s.answers[key]
	s.mu.Unlock()
	switch rb {
	case ReconcileError:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "lookup failed"})
	case ReconcileNotFound:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such key"})
	case ReconcileApplied:
		if !applied {
			answer, _ = json.Marshal(map[string]string{"key": key})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	default:
		if !applied {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such key"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
