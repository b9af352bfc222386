// Command embed shows how a Go team mounts keelpay in its own server: the
// store's own routes and keelpay's API on one mux, keelpay under /payments/,
// its background work (webhook dispatcher, payment and refund reconcilers,
// expiry) started with the server's context and stopped with it, and its
// health and metrics on internal paths of the team's choosing.
//
//	go run ./examples/embed -addr 127.0.0.1:8090 -insecure-webhooks
//	curl -s -X POST http://127.0.0.1:8090/payments/v1/setup -H 'Content-Type: application/json' \
//	  -d '{"client_id":"app_embed","client_secret":"secret_embed","webhook_url":"http://127.0.0.1:9000/webhooks"}'
//
// Secrets kept in the database are sealed with the keys of
// KEELPAY_ENCRYPTION_KEY or, without it, of a key file beside the database
// (embed.db.key), created on first start: see docs/security.md. Webhook
// URLs must be public https URLs, as in production; -insecure-webhooks
// allows http and local hosts for trying it out on one machine.
//
// Swap the sandbox for your provider's adapter (a provider.Provider) and
// SQLite for storage/postgres to run it for real.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	dbPath := flag.String("db", "embed.db", "SQLite file")
	insecure := flag.Bool("insecure-webhooks", false, "allow http and local webhook URLs (trying it out, never in production)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, options{addr: *addr, dbPath: *dbPath, insecureWebhooks: *insecure}); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	addr             string
	dbPath           string
	insecureWebhooks bool
}

// openKeyring reads the keys of KEELPAY_ENCRYPTION_KEY, else those of the
// key file beside the database, which it creates the first time.
func openKeyring(dbPath string, logger *slog.Logger) (*keyring.Keyring, error) {
	if env := os.Getenv("KEELPAY_ENCRYPTION_KEY"); env != "" {
		return keyring.Parse(env)
	}
	kr, created, err := keyring.ReadOrCreateFile(dbPath+".key", "k1")
	if created {
		logger.Warn("created a new encryption key file beside the database: back it up with the database", slog.String("key_file", dbPath+".key"))
	}
	return kr, err
}

func run(ctx context.Context, o options) error {
	addr, dbPath := o.addr, o.dbPath
	// Lines written while a request is served carry its request_id.
	logger := slog.New(keelpay.NewLogHandler(slog.NewTextHandler(os.Stderr, nil)))
	kr, err := openKeyring(dbPath, logger)
	if err != nil {
		return err
	}
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: dbPath})
	if err != nil {
		return err
	}
	defer db.Close()
	prov := sandbox.New(sandbox.Config{BaseURL: "http://" + addr + "/payments"})

	svc, err := service.New(service.Config{
		AllowInsecureWebhooks: o.insecureWebhooks,
		Logger:                logger,
		Provider:              prov,
		Storage:               db,
	})
	if err != nil {
		return err
	}
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Stop(context.WithoutCancel(ctx))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("the store's own page\n"))
	})
	mux.Handle("/payments/", http.StripPrefix("/payments", svc.Handler()))
	mux.Handle("/payments/sandbox/3ds/", http.StripPrefix("/payments", prov.ChallengeHandler()))
	mux.Handle("/payments/sandbox/elements/", http.StripPrefix("/payments", prov.ElementHandler()))
	mux.Handle("/internal/healthz", svc.HealthHandler())
	mux.Handle("/internal/metrics", svc.MetricsHandler())

	srv := httpapi.NewServer(mux, logger)
	srv.Addr = addr
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.WithoutCancel(ctx))
	}()
	logger.Info("listening", slog.String("addr", addr))
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
