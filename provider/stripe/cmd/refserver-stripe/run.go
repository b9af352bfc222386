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
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider/stripe"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// Routes of the Stripe adapter.
const (
	returnPath  = "/stripe/return"
	webhookPath = "/stripe/webhook"
)

type config struct {
	addr, db, keyFile, logFormat string
	account, key, webhookSecret  string
	publicURL, encryptionKey     string
}

// required are the environment variables without which the server does
// not start, and what each is.
var required = []struct{ name, what string }{
	{"KEELPAY_STRIPE_ACCOUNT", "the Stripe account id, acct_..."},
	{"KEELPAY_STRIPE_KEY", "a restricted key of the account, rk_live_... or rk_test_..."},
	{"KEELPAY_STRIPE_WEBHOOK_SECRET", "the signing secret of the account's webhook endpoint, whsec_..."},
	{"KEELPAY_PUBLIC_URL", "this server's public https URL, for Stripe's 3D Secure return and webhooks"},
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("refserver-stripe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.addr, "addr", envOr(getenv, "KEELPAY_ADDR", "127.0.0.1:8080"), "listen address (env KEELPAY_ADDR)")
	fs.StringVar(&c.db, "db", envOr(getenv, "KEELPAY_DB", "keelpay.db"), "SQLite file path or postgres:// URL (env KEELPAY_DB)")
	fs.StringVar(&c.keyFile, "key-file", getenv("KEELPAY_KEY_FILE"), "file with the encryption keys (env KEELPAY_KEY_FILE); or KEELPAY_ENCRYPTION_KEY")
	fs.StringVar(&c.logFormat, "log-format", envOr(getenv, "KEELPAY_LOG_FORMAT", "text"), "log format, text or json (env KEELPAY_LOG_FORMAT)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return c, errors.New("-log-format must be text or json")
	}
	var missing []string
	for _, r := range required {
		if getenv(r.name) == "" {
			missing = append(missing, r.name+" ("+r.what+")")
		}
	}
	c.encryptionKey = getenv("KEELPAY_ENCRYPTION_KEY")
	if c.encryptionKey == "" && c.keyFile == "" {
		missing = append(missing, "KEELPAY_ENCRYPTION_KEY or -key-file (the encryption keys of the database's secrets)")
	}
	if len(missing) > 0 {
		return c, errors.New("cannot start with Stripe; missing: " + strings.Join(missing, "; "))
	}
	c.account, c.key = getenv("KEELPAY_STRIPE_ACCOUNT"), getenv("KEELPAY_STRIPE_KEY")
	c.webhookSecret = getenv("KEELPAY_STRIPE_WEBHOOK_SECRET")
	c.publicURL = strings.TrimRight(getenv("KEELPAY_PUBLIC_URL"), "/")
	if !strings.HasPrefix(c.publicURL, "https://") {
		return c, errors.New("KEELPAY_PUBLIC_URL must be an https URL: Stripe sends buyers and webhooks there")
	}
	return c, nil
}

func openStorage(ctx context.Context, dsn string, kr *keyring.Keyring) (storage.Storage, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return postgres.Open(ctx, postgres.Config{DSN: dsn, Keyring: kr})
	}
	return sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: dsn})
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, nil)
	if cfg.logFormat == "json" {
		handler = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(keelpay.NewLogHandler(handler))

	var kr *keyring.Keyring
	if cfg.encryptionKey != "" {
		kr, err = keyring.Parse(cfg.encryptionKey)
	} else {
		kr, err = keyring.ReadFile(cfg.keyFile)
	}
	if err != nil {
		return fmt.Errorf("encryption key: %w", err)
	}
	prov, err := stripe.New(stripe.Config{
		Accounts:  []stripe.Account{{ID: cfg.account, Key: cfg.key, WebhookSecret: cfg.webhookSecret}},
		ReturnURL: cfg.publicURL + returnPath,
	})
	if err != nil {
		return err
	}
	db, err := openStorage(ctx, cfg.db, kr)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer db.Close()

	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	svc, err := service.New(service.Config{Logger: log, Metrics: metrics, Provider: prov, Storage: db})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", svc.HealthHandler())
	mux.Handle("GET /metrics", svc.MetricsHandler())
	mux.Handle("GET "+returnPath, prov.ReturnHandler())
	mux.Handle("POST "+webhookPath, prov.WebhookHandler())
	mux.Handle("/", svc.Handler())

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	if err := svc.Start(context.WithoutCancel(ctx)); err != nil {
		ln.Close()
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := svc.Stop(stopCtx); err != nil {
			log.Warn("background work did not stop in time", slog.Any("error", err))
		}
	}()
	srv := httpapi.NewServer(mux, log)
	fmt.Fprintf(stdout, "keelpay reference server with Stripe listening on http://%s (account %s; public URL %s)\n",
		ln.Addr(), cfg.account, cfg.publicURL)
	log.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("stripe_account", cfg.account))

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
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
