package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/httpprovider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// config is what flags and environment variables choose.
type config struct {
	addr       string
	db         string
	logFormat  string
	sandboxURL string
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("refserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.addr, "addr", envOr(getenv, "KEELPAY_ADDR", "127.0.0.1:8080"), "listen address (env KEELPAY_ADDR)")
	fs.StringVar(&c.db, "db", envOr(getenv, "KEELPAY_DB", "keelpay.db"), "SQLite file path or postgres:// URL (env KEELPAY_DB)")
	fs.StringVar(&c.logFormat, "log-format", envOr(getenv, "KEELPAY_LOG_FORMAT", "text"), "log format, text or json (env KEELPAY_LOG_FORMAT)")
	fs.StringVar(&c.sandboxURL, "sandbox-url", getenv("KEELPAY_SANDBOX_URL"),
		"use the sandbox of the reference server at this URL instead of owning one (env KEELPAY_SANDBOX_URL)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return c, fmt.Errorf("-log-format must be text or json")
	}
	return c, nil
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// redactDSN hides the password of a database URL, for printing and logs.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}

// newLogger is the one logger of every part of the server: lines written
// while a request is served carry its request_id.
func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "json" {
		return slog.New(keelpay.NewLogHandler(slog.NewJSONHandler(w, nil)))
	}
	return slog.New(keelpay.NewLogHandler(slog.NewTextHandler(w, nil)))
}

// withRequestID gives the routes outside the API (the sandbox's) what the
// API gives its own: a Request-Id header on every answer, and the id in the
// request's context for the logs.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := keelpay.NewID(keelpay.PrefixRequest)
		w.Header().Set("Request-Id", id)
		next.ServeHTTP(w, r.WithContext(keelpay.ContextWithRequestID(r.Context(), id)))
	})
}

// openStorage opens a PostgreSQL database for a postgres:// or
// postgresql:// URL, and a SQLite file for anything else.
func openStorage(ctx context.Context, dsn string) (storage.Storage, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return postgres.Open(ctx, postgres.Config{DSN: dsn})
	}
	return sqlite.Open(ctx, sqlite.Config{Path: dsn})
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	log := newLogger(cfg.logFormat, stderr)
	// Sandbox mode: the service's clock can be moved forward with POST
	// /sandbox/clock; the sandbox provider shares it.
	clock := &keelpay.OffsetClock{}
	// One process owns the sandbox (sb) and serves it to the others, which
	// reach it over HTTP: so a challenge, an unknown outcome or a refund
	// started by any process can be answered by any other, as with a real
	// provider.
	var (
		prov provider.Provider
		sb   *sandbox.Sandbox
	)
	if cfg.sandboxURL != "" {
		remote, err := httpprovider.New(httpprovider.Config{BaseURL: cfg.sandboxURL})
		if err != nil {
			return fmt.Errorf("-sandbox-url: %w", err)
		}
		prov = remote
	}

	db, err := openStorage(ctx, cfg.db)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer db.Close()

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	baseURL := "http://" + ln.Addr().String()

	if prov == nil {
		sb = sandbox.New(sandbox.Config{BaseURL: baseURL, Clock: clock})
		prov = sb
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	st := stores.New(stores.Config{AllowInsecureWebhooks: true, Clock: clock, Provider: prov, Storage: db})
	dispatcher := events.NewDispatcher(events.DispatcherConfig{AllowInsecure: true, Clock: clock, Logger: log, Metrics: metrics, Storage: db})
	ev := events.NewService(events.Config{Clock: clock, Dispatcher: dispatcher, Storage: db})
	// The owner's sandbox notifies its own payments service, which
	// finishes the intent in the shared database whichever process
	// started it.
	pay := payments.New(payments.Config{Clock: clock, Logger: log, Metrics: metrics, Provider: prov, Storage: db})
	ref := refunds.New(refunds.Config{Clock: clock, Logger: log, Metrics: metrics, Notify: dispatcher.Notify, Provider: prov, Storage: db})
	api := httpapi.New(httpapi.Config{Clock: clock, Events: ev, Logger: log, Metrics: metrics, Payments: pay, Refunds: ref, Storage: db, Stores: st})

	mux := http.NewServeMux()
	if sb != nil {
		mux.Handle("/sandbox/3ds/", withRequestID(sb.ChallengeHandler()))
		mux.Handle("/sandbox/provider/", withRequestID(sb.APIHandler()))
	}
	// After a move of the sandbox clock, what became due happens before
	// the answer: expiry, 3D Secure time-outs, reconciliation; the
	// resulting webhooks follow at once.
	mux.Handle("/sandbox/clock", withRequestID(sandboxClock(clock, log, func(ctx context.Context) error {
		defer dispatcher.Notify()
		return errors.Join(pay.Expire(ctx), pay.Reconcile(ctx), ref.Reconcile(ctx))
	})))
	mux.Handle("/", api)

	// Background work stops after the HTTP server has drained.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	var workers sync.WaitGroup
	defer func() { stopWork(); workers.Wait() }()
	workers.Go(func() {
		if err := dispatcher.Run(workCtx); err != nil {
			log.Error("dispatcher stopped", slog.Any("error", err))
		}
	})
	workers.Go(func() { pay.Run(workCtx, payments.RunEveryDefault) })
	workers.Go(func() { ref.Run(workCtx, payments.RunEveryDefault) })
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	sandboxAt := "its own sandbox, served at " + baseURL + "/sandbox/provider/"
	if sb == nil {
		sandboxAt = "the sandbox at " + cfg.sandboxURL
	}
	fmt.Fprintf(stdout, "keelpay reference server listening on %s (sandbox mode: %s; database %s)\n\n", baseURL, sandboxAt, redactDSN(cfg.db))
	fmt.Fprintf(stdout, "Set up a sandbox store:\n\n  curl -s -X POST %s/v1/setup -H 'Content-Type: application/json' \\\n"+
		"    -d '{\"client_id\":\"app_demo\",\"client_secret\":\"secret_demo\",\"webhook_url\":\"http://127.0.0.1:9000/webhooks\"}'\n\n", baseURL)
	log.Info("listening", slog.String("url", baseURL), slog.String("db", redactDSN(cfg.db)), slog.String("sandbox", sandboxAt))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
