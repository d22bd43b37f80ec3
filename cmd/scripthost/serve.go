package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/host"
	"github.com/scripthost/scripthost/observe"
	"github.com/scripthost/scripthost/runtime"
	"github.com/scripthost/scripthost/serve"
)

func init() { commands = append(commands, newServeCmd) }

type serveFlags struct {
	runFlags
	listen      string
	token       string
	tokenFile   string
	tlsCert     string
	tlsKey      string
	allowRemote bool
	grace       time.Duration
	slowCall    time.Duration
	limits      serve.Limits
	// metricsPublic serves /metrics without the token (--metrics-public).
	metricsPublic bool
}

// serveTokenEnv names the variable that gives serve its token.
const serveTokenEnv = "SCRIPTHOST_TOKEN"

func newServeCmd(g *globals) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve [--listen ADDR] [WORKFLOW...]",
		Short: "Run workflows and serve the HTTP API, the web UI and the metrics",
		Long: `Run the workflows given (as run does, until stopped) and serve, in the same process,
the JSON API (docs/openapi.yaml), the web UI at / and Prometheus metrics at /metrics.
Without workflows it serves the ledger only (inspect, resolve, pause, retry).

/healthz (the process is up) and /readyz (the ledger answers) need no token. Every
API and metrics request needs the bearer token (--metrics-public: not /metrics): --token, else the file
--token-file names, else $` + serveTokenEnv + `, else the token kept beside the ledger
(DB.token), which the first start generates and prints. That file must be a regular
file of this user that nobody else can read or write; anything else there (a symbolic
link, a file with group or other permissions) is refused, never used or overwritten.

A client has --read-timeout to send a request and --idle-timeout between requests on
one connection; at most --max-connections are served at once, the next ones wait.

A non-loopback --listen needs TLS (--tls-cert, --tls-key) or --allow-remote.
SIGTERM or Ctrl-C stop claiming new work, let the phases under way finish for up to
--grace, then exit 0; a phase cut short is picked up by the next start.

Traces are exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveCmd(cmd.Context(), g, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:7433", "address to serve on")
	fl.StringVar(&f.token, "token", "", "the bearer token (default: --token-file, $"+serveTokenEnv+", or DB.token)")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the bearer token from this file")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the certificate's private key (PEM)")
	fl.BoolVar(&f.allowRemote, "allow-remote", false, "listen on a non-loopback address without TLS")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "on SIGTERM, how long running phases may take to finish")
	fl.DurationVar(&f.slowCall, "slow-call", 5*time.Second, "log a tool call that takes longer than this (0: never)")
	fl.DurationVar(&f.limits.ReadTimeout, "read-timeout", serve.DefaultLimits.ReadTimeout, "longest time a client may take to send one request (its headers: at most 10s)")
	fl.DurationVar(&f.limits.IdleTimeout, "idle-timeout", serve.DefaultLimits.IdleTimeout, "close a connection that sends no request for this long")
	fl.IntVar(&f.limits.MaxConns, "max-connections", serve.DefaultLimits.MaxConns, "most connections served at once; more wait to be accepted")
	fl.StringVar(&f.workspace, "workspace", "", "directory the Files.* tools are confined to (default: the first workflow's directory)")
	fl.StringVar(&f.tools, "tools", "", "HTTP tools declared in a JSON or YAML file")
	fl.DurationVar(&f.poll, "poll", 250*time.Millisecond, "how often to look for work when idle")
	fl.DurationVar(&f.timeout, "timeout", 0, "wall-clock limit of one handler invocation (default 5s)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log every tool call and mutation to stderr")
	fl.StringSliceVar(&f.allow, "allow", nil, "programs plan.run_command may run (repeatable; none by default)")
	fl.IntVar(&f.reconcile.MaxAttempts, "reconcile-attempts", 5, "reconcile attempts for an uncertain mutation before a person must resolve it")
	fl.DurationVar(&f.reconcile.BaseDelay, "reconcile-delay", time.Second, "wait after the first undecided reconcile attempt (doubles each time)")
	fl.DurationVar(&f.reconcile.MaxDelay, "reconcile-max-delay", 5*time.Minute, "longest wait between reconcile attempts")
	fl.IntVar(&f.concurrency, "concurrency", 0, "most runs driven at once, across every workflow (0: 4 per CPU, at least 16)")
	fl.StringVar(&f.lease.Owner, "host-id", "", "this host's name in the leases of a shared (postgres://) ledger")
	fl.DurationVar(&f.lease.TTL, "lease-ttl", 15*time.Second, "shared ledger: how long a dead host's workflows wait before another host takes them over")
	fl.BoolVar(&f.metricsPublic, "metrics-public", false, "serve /metrics without the token (only where the port is reachable by the scraper alone)")
	addRecordCallsFlag(cmd, g)
	return cmd
}

func serveCmd(ctx context.Context, g *globals, f serveFlags, paths []string) (err error) {
	started := false
	defer func(signalled context.Context) { err = stoppedWhileStarting(signalled, g, started, err) }(ctx)
	tlsOn := f.tlsCert != "" || f.tlsKey != ""
	if tlsOn && (f.tlsCert == "" || f.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if _, _, err := net.SplitHostPort(f.listen); err != nil {
		return usagef("--listen %q: want HOST:PORT (e.g. 127.0.0.1:7433)", f.listen)
	}
	if !serve.Loopback(f.listen) && !tlsOn && !f.allowRemote {
		return usagef("--listen %s accepts connections from other machines: serve it with TLS (--tls-cert, --tls-key) or pass --allow-remote", f.listen)
	}
	if f.grace < 0 || f.lease.TTL <= 0 {
		return usagef("--grace must be 0 or more and --lease-ttl positive")
	}
	if f.limits.ReadTimeout <= 0 || f.limits.IdleTimeout <= 0 || f.limits.MaxConns <= 0 {
		return usagef("--read-timeout, --idle-timeout and --max-connections must be positive")
	}
	f.limits.ReadHeaderTimeout = min(f.limits.ReadTimeout, serve.DefaultLimits.ReadHeaderTimeout)
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return usagef("workflow %s: %v", p, errors.Unwrap(err))
		}
		if _, err := langOf(p); err != nil {
			return usageError{err: err}
		}
	}
	ws := f.workspace
	if ws == "" && len(paths) > 0 {
		ws = filepath.Dir(paths[0])
	}
	// Before the token is generated beside the ledger or the ledger opened, so that a
	// refused start leaves nothing behind.
	if err := g.keepLedgerOut(ws); err != nil {
		return err
	}
	token, err := serveToken(g, f)
	if err != nil {
		return err
	}
	logger := g.logger(logLevel(f.verbose))
	// Traces go out over OTLP when the standard variables ask for it.
	opts := observe.Options{Logger: logger, SlowCall: f.slowCall}
	if f.slowCall == 0 {
		opts.SlowCall = -1
	}
	if f.lease.Owner == "" {
		// Named here, so that the traces' resource and the leases name this host alike.
		f.lease.Owner = runtime.DefaultOwner()
	}
	if observe.TracingConfigured() {
		tp, shutdown, err := observe.OTLP(ctx, "scripthost", f.lease.Owner)
		if err != nil {
			return err
		}
		defer shutdown(context.WithoutCancel(ctx))
		opts.Tracer = tp
	}
	obs := observe.New(opts)
	g.observer.Store(obs)
	h, store, err := buildHost(ctx, g, ws, f.tools, f.timeout, f.verbose, f.allow, f.reconcile, f.concurrency, f.lease, g.Stdout)
	if err != nil {
		return err
	}
	defer store.Close()
	defer h.Close(context.WithoutCancel(ctx))
	ctx, stopWatch := stopWhenOutdated(ctx, g, store)
	defer stopWatch()
	for _, p := range paths {
		v, err := h.Load(ctx, p, host.LoadOptions{})
		if err != nil {
			return err
		}
		logger.Info("workflow loaded", "workflow", v.Workflow, "version", v.Version, "path", p)
	}
	obs.WatchBlocked(func(ctx context.Context) ([]scripthost.Run, error) {
		out, err := h.Outstanding(ctx)
		runs := make([]scripthost.Run, len(out.Blocked))
		for i, b := range out.Blocked {
			runs[i] = b.Run
		}
		return runs, err
	})
	srv, err := serve.New(serve.Config{Store: store, Token: token, Metrics: obs.Handler(), MetricsPublic: f.metricsPublic, Wake: h.Runtime().Wake,
		Publish: h.Publish, Logger: logger})
	if err != nil {
		return err
	}
	tcp, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	hs, ln := serve.HTTPServer(srv, tcp, f.limits)
	scheme := "http"
	if tlsOn {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			ln.Close()
			return usagef("--tls-cert/--tls-key: %v", err)
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, hs.TLSConfig)
		scheme = "https"
	}
	fmt.Fprintf(g.Stderr, "serving on %s://%s\n", scheme, ln.Addr())

	// The host runs with a context of its own: a signal stops it claiming work, and
	// only the end of the grace period cancels what is under way (hostLoop).
	loop := newHostLoop(ctx)
	defer loop.cancel()
	if err := obs.Follow(loop.ctx, store, f.poll); err != nil {
		return err
	}
	loop.start(func(ctx context.Context, stop <-chan struct{}) error { return h.RunUntil(ctx, stop, f.poll) })
	started = true
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	var runErr error
	running := true
wait:
	for {
		select {
		case <-ctx.Done():
			if running {
				runErr = loop.drain(logger, f.grace)
			}
			break wait
		case runErr = <-loop.ran:
			// Without workflows the host has nothing to run: serve the ledger alone.
			running = false
			if runErr != nil {
				break wait
			}
		case err := <-served:
			if running {
				loop.abort()
			}
			return fmt.Errorf("serve: %w", err)
		}
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// The lines of the last runs, written since the last poll.
	if err := obs.Flush(shutCtx); err != nil {
		logger.Warn("reading the lifecycle log", "err", err)
	}
	if err := hs.Shutdown(shutCtx); err != nil {
		logger.Warn("closing HTTP connections", "err", err)
	}
	if runErr != nil {
		return runErr
	}
	if err := outdatedCause(ctx); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

func logLevel(verbose bool) slog.Level {
	if verbose {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// serveToken finds the bearer token: --token, --token-file, $SCRIPTHOST_TOKEN, else
// the file beside the ledger, generated (and printed) when it does not exist yet.
func serveToken(g *globals, f serveFlags) (string, error) {
	check := func(from, t string) (string, error) {
		t = strings.TrimSpace(t)
		if len(t) < 16 {
			return "", usagef("the token from %s is too short: use at least 16 characters", from)
		}
		return t, nil
	}
	switch {
	case f.token != "":
		return check("--token", f.token)
	case f.tokenFile != "":
		b, err := os.ReadFile(f.tokenFile)
		if err != nil {
			return "", usagef("--token-file: %v", err)
		}
		return check("--token-file "+f.tokenFile, string(b))
	case os.Getenv(serveTokenEnv) != "":
		return check("$"+serveTokenEnv, os.Getenv(serveTokenEnv))
	}
	path, err := tokenPath(g)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("serve: token: %w", err)
	}
	if err := checkTokenDir(filepath.Dir(path)); err != nil {
		return "", err
	}
	b, err := readTokenFile(path)
	if err == nil {
		return check(path, string(b))
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	t, err := serve.NewToken()
	if err != nil {
		return "", err
	}
	if err := writeTokenFile(path, t); err != nil {
		return "", err
	}
	fmt.Fprintf(g.Stderr, "generated a bearer token, saved in %s (log in with it):\n%s\n", path, t)
	return t, nil
}

// readTokenFile reads the token file serve keeps, or returns an error wrapping
// os.ErrNotExist when there is none. It refuses a file anyone but this user could
// have written or can read: a symbolic link (opened with O_NOFOLLOW, so not even its
// target is read), anything but a regular file, a file another user owns, a file with
// any group or other permission. Another local user must not be able to choose the
// token nor learn it.
func readTokenFile(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("serve: token: %w", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, tokenRefused(path, "is a symbolic link")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, tokenRefused(path, "is a symbolic link")
		}
		return nil, fmt.Errorf("serve: token: %w", err)
	}
	defer f.Close()
	// The checks are made on the file opened, not on the name, which could be
	// replaced in between.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("serve: token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, tokenRefused(path, "is not a regular file")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, tokenRefused(path, fmt.Sprintf("belongs to user %d, not to this user (%d)", st.Uid, os.Getuid()))
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, tokenRefused(path, fmt.Sprintf("has mode %04o: others than its owner may read or write it (want 0600)", perm))
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("serve: token: %w", err)
	}
	return b, nil
}

// tokenRefused says why a token file is not used, and how to go on.
func tokenRefused(path, why string) error {
	return fmt.Errorf("serve: the token file %s %s: refusing to use it; remove it to have a new token generated, or give --token-file", path, why)
}

// writeTokenFile creates the token file, 0600, failing rather than following a
// symbolic link or opening a file that appeared since it was looked for.
func writeTokenFile(path, token string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("serve: token: %w", err)
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("serve: token: %w", err)
	}
	return nil
}

// checkTokenDir refuses a token directory another user could plant files in: one
// writable by group or others without the sticky bit (in a sticky directory such as
// /tmp, others can create names but not replace this user's files, and a name they
// planted is refused by readTokenFile), or one owned by another user than this one or
// root.
func checkTokenDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("serve: token: %w", err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() && st.Uid != 0 {
		return fmt.Errorf("serve: the token's directory %s belongs to user %d: another user could replace the token there; give --token-file", dir, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("serve: the token's directory %s has mode %04o: others could replace the token there; remove their write permission or give --token-file", dir, fi.Mode().Perm())
	}
	return nil
}

// tokenPath is where serve keeps its generated token: beside an SQLite ledger, in
// the user's configuration directory for a PostgreSQL one.
func tokenPath(g *globals) (string, error) {
	if !g.shared() {
		return g.DBPath + ".token", nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", usagef("no place for a generated token (%v): give --token or --token-file", err)
	}
	return filepath.Join(dir, "scripthost", "serve.token"), nil
}
