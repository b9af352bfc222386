// Command receiver is a store's webhook receiver for keelpay, built on package
// webhooks. It verifies every delivery, answers 204 (or 400 to an invalid
// one), keeps the ids of the events it has seen in SQLite so that a repeated
// delivery is dropped even after a restart, and fulfils an order when a
// payment intent has succeeded, at most once per payment intent whatever
// arrives twice (docs/webhooks.md).
//
// Run it next to the reference server. In one terminal:
//
//	go run ./cmd/refserver
//
// In another, set up a store whose webhook_url is this receiver:
//
//	curl -s -X POST http://127.0.0.1:8080/v1/setup -H 'Content-Type: application/json' \
//	    -d '{"client_id":"app_demo","client_secret":"secret_demo","webhook_url":"http://127.0.0.1:9000/webhooks"}'
//
// copy webhook_secret from the answer and start the receiver:
//
//	KEELPAY_WEBHOOK_SECRET=whsec_... go run ./examples/receiver -addr 127.0.0.1:9000 -db receiver.db
//
// While the webhook secret rotates, KEELPAY_WEBHOOK_SECRET holds both secrets
// separated by a comma. A test delivery is sent with
//
//	curl -s -X POST http://127.0.0.1:8080/v1/webhooks/test -H 'Authorization: Bearer sk_...'
//
// The receiver logs to stderr the id and type of every event it processes,
// never a body or a secret.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/webhooks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], log); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		log.Error("receiver stopped", "err", err)
		os.Exit(1)
	}
}

// run serves deliveries until ctx is done, then lets the events being
// processed finish before it closes the database.
func run(ctx context.Context, args []string, log *slog.Logger) error {
	fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9000", "listen address")
	dbPath := fs.String("db", "receiver.db", "SQLite file of seen events and fulfilled orders")
	path := fs.String("path", "/webhooks", "path of the webhook_url")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v, err := webhooks.NewVerifier(parseSecrets(os.Getenv("KEELPAY_WEBHOOK_SECRET")))
	if err != nil {
		return fmt.Errorf("KEELPAY_WEBHOOK_SECRET: %w", err)
	}
	db, err := openDB(ctx, *dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	r := &receiver{db: db, log: log}
	if err := r.warnUnprocessed(ctx); err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle(*path, r.newHandler(v, nil))
	srv := httpapi.NewServer(mux, log)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	log.Info("listening", "url", "http://"+ln.Addr().String()+*path, "db", *dbPath)
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
		return err
	}
	r.wait() // events answered with 204 are not delivered again: finish them
	log.Info("stopped")
	return nil
}
