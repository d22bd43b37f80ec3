// Package serve is the HTTP side of `scripthost serve`: a JSON API over the ledger
// (the shapes of the CLI's --json output, from internal/view), the operator actions
// (resolve, pause, resume, retry), each recorded with who did it, the embedded web UI
// and the metrics. Every /api and /metrics request needs the bearer token.
package serve

import (
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

	"github.com/scripthost/scripthost/ledger"
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
	// Wake, when set, is called with a workflow's name after an action that gives its
	// host work (resume, retry, resolve), so that it does not wait for its next poll.
	Wake   func(workflows ...string)
	Logger *slog.Logger
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
	for _, r := range routes(s) {
		s.mux.Handle(r.Method+" "+r.Path, s.authed(r.handle))
	}
	if cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", s.authed(func(w http.ResponseWriter, r *http.Request) error {
			cfg.Metrics.ServeHTTP(w, r)
			return nil
		}))
	}
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
	case errors.As(err, &br):
		return http.StatusBadRequest
	case errors.Is(err, ledger.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ledger.ErrIllegalTransition), errors.Is(err, ledger.ErrEventUnavailable):
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
