// Package serve is the HTTP side of `scripthost serve`: a JSON API over the ledger
// (the shapes of the CLI's --json output, from internal/view), the operator actions
// (resolve, pause, resume, retry, publish, skip an event, approve and deny an agent's
// tool call), each recorded with who did it, the embedded web UI and the metrics.
// Every /api and /metrics request needs the bearer token (/metrics not when
// Config.MetricsPublic); /healthz and /readyz need none.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/agent"
	"github.com/scripthost/scripthost/internal/view"
	"github.com/scripthost/scripthost/ledger"
	"golang.org/x/net/netutil"
)

//go:embed ui
var uiFS embed.FS

// Config configures a Server. Store and Token are required.
type Config struct {
	Store ledger.Store
	// Token is the bearer token every API request must carry.
	Token string
	// Metrics, when set, is served at /metrics (behind the token).
	Metrics http.Handler
	// MetricsPublic serves /metrics without the token, for a scraper that cannot
	// carry one. The page names workflows, handlers and tools, and reading it reads
	// the ledger: keep it behind the token unless the port is reachable only by the
	// scraper.
	MetricsPublic bool
	// Wake, when set, is called with a workflow's name after an action that gives its
	// host work (resume, retry, resolve), so that it does not wait for its next poll.
	Wake func(workflows ...string)
	// Publish, when set, stores events published through the API (host.Host.Publish,
	// which wakes the workflow too); unset, the store's Publish, then Wake.
	Publish func(ctx context.Context, events ...ledger.NewEvent) ([]scripthost.Event, error)
	Logger  *slog.Logger
	// Clock defaults to time.Now.
	Clock func() time.Time
}

// Server serves the API, the UI and the metrics.
type Server struct {
	cfg Config
	mux *http.ServeMux
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("serve: no ledger store")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("serve: the token must be at least 16 characters")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	if s.cfg.Publish == nil {
		s.cfg.Publish = func(ctx context.Context, events ...ledger.NewEvent) ([]scripthost.Event, error) {
			out, err := cfg.Store.Publish(ctx, events...)
			if err == nil {
				for _, e := range events {
					s.wake(e.Workflow)
				}
			}
			return out, err
		}
	}
	for _, r := range routes(s) {
		s.mux.Handle(r.Method+" "+r.Path, s.authed(r.handle))
	}
	if cfg.Metrics != nil {
		var h http.Handler = s.authed(func(w http.ResponseWriter, r *http.Request) error {
			cfg.Metrics.ServeHTTP(w, r)
			return nil
		})
		if cfg.MetricsPublic {
			h = cfg.Metrics
		}
		s.mux.Handle("GET /metrics", h)
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeProbe(w, http.StatusOK, "ok")
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	ui, _ := fs.Sub(uiFS, "ui")
	s.mux.Handle("GET /", http.FileServerFS(ui))
	noRoute := func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Errorf("no route %s %s (see docs/openapi.yaml)", r.Method, r.URL.Path))
	}
	s.mux.HandleFunc("GET /api/", noRoute)
	s.mux.HandleFunc("POST /api/", noRoute)
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
	s.mux.ServeHTTP(w, r)
}

// handlerFunc is an API handler: it writes its answer, or returns an error that
// becomes a JSON error with the matching status.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// authed checks the bearer token, then runs h.
func (s *Server) authed(h handlerFunc) http.Handler {
	want := []byte(s.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scripthost"`)
			writeError(w, http.StatusUnauthorized, errors.New("missing bearer token (Authorization: Bearer TOKEN)"))
			return
		}
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scripthost", error="invalid_token"`)
			writeError(w, http.StatusUnauthorized, errors.New("wrong token"))
			return
		}
		if err := h(w, r); err != nil {
			status := statusOf(err)
			if status == http.StatusInternalServerError {
				s.cfg.Logger.Error("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			writeError(w, status, err)
		}
	})
}

// badRequest marks an error in the request itself.
type badRequest struct{ err error }

func (e badRequest) Error() string { return e.err.Error() }
func (e badRequest) Unwrap() error { return e.err }

func badf(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

func statusOf(err error) int {
	var br badRequest
	switch {
	case errors.As(err, &br), errors.Is(err, view.ErrBadEvent), errors.Is(err, view.ErrBadBulk), errors.Is(err, view.ErrBadCursor):
		return http.StatusBadRequest
	case errors.Is(err, view.ErrEventConflict), errors.Is(err, view.ErrBulkChanged):
		return http.StatusConflict
	case errors.Is(err, ledger.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ledger.ErrIllegalTransition), errors.Is(err, ledger.ErrEventUnavailable), errors.Is(err, agent.ErrNotPending):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, apiError{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// NewToken returns a fresh random token.
func NewToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("serve: token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Loopback reports whether a listen address (host:port) only accepts connections from
// this machine.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Limits bound what one client can hold of the server: how long it may take to send a
// request, how long an idle keep-alive connection stays open, how large its headers
// may be, and how many connections are served at once. No endpoint streams or waits
// for events (the UI polls), so one deadline fits every request.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers (a slowloris client is cut
	// off after it).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request's headers to the end of
	// the answer, so that a client that stops reading does not hold its connection.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes int
	// MaxConns bounds the connections served at once; more wait to be accepted.
	MaxConns int
}

// DefaultLimits are the limits serve uses unless told otherwise.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 10 * time.Second,
	ReadTimeout:       30 * time.Second,
	WriteTimeout:      time.Minute,
	IdleTimeout:       time.Minute,
	MaxHeaderBytes:    64 << 10,
	MaxConns:          256,
}

// withDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = d.MaxConns
	}
	return l
}

// HTTPServer returns an http.Server for h with the limits l (zero fields take
// DefaultLimits), and ln wrapped so that at most l.MaxConns connections are open at
// once: serve with srv.Serve(ln) or srv.ServeTLS(ln, …).
func HTTPServer(h http.Handler, ln net.Listener, l Limits) (*http.Server, net.Listener) {
	l = l.withDefaults()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
	return srv, netutil.LimitListener(ln, l.MaxConns)
}

// readyTimeout bounds the ledger read of a readiness probe.
const readyTimeout = 2 * time.Second

// readyz answers 200 when the ledger answers a read within readyTimeout, else 503;
// the ledger's error goes to the log, not to the unauthenticated caller.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if _, err := s.cfg.Store.Runs(ctx, ledger.RunFilter{Limit: 1}); err != nil {
		s.cfg.Logger.Warn("readiness: the ledger does not answer", "err", err)
		writeProbe(w, http.StatusServiceUnavailable, "ledger unreachable")
		return
	}
	writeProbe(w, http.StatusOK, "ok")
}

// writeProbe writes a probe's one-line plain-text answer, never cached.
func writeProbe(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintln(w, text)
}
