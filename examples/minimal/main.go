// Command minimal is the embedding of the README, kept here so that it
// compiles and its test runs it: keelpay under /payments/ of a store's own
// server, with its encryption keys and the sandbox's 3D Secure pages.
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"os"
	"os/signal"

	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	addr := "127.0.0.1:8090"
	if a := os.Getenv("ADDR"); a != "" {
		addr = a
	}

	// The keys that seal secrets in the database: created on first start;
	// back the file up apart from the database (docs/security.md).
	kr, _, err := keyring.ReadOrCreateFile("shop.db.key", "k1")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: "shop.db"})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	// The sandbox's 3D Secure pages (next_action.url) and its card element
	// (which the card field mounts) live under the same prefix as the
	// API: BaseURL says where.
	sb := sandbox.New(sandbox.Config{BaseURL: "http://" + addr + "/payments"})
	svc, err := service.New(service.Config{Provider: sb, Storage: db})
	if err != nil {
		log.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer svc.Stop(context.WithoutCancel(ctx))

	mux := http.NewServeMux()
	mux.Handle("/payments/", http.StripPrefix("/payments", svc.Handler()))
	mux.Handle("/payments/sandbox/3ds/", http.StripPrefix("/payments", sb.ChallengeHandler()))
	mux.Handle("/payments/sandbox/elements/", http.StripPrefix("/payments", sb.ElementHandler()))
	mux.Handle("/internal/healthz", svc.HealthHandler())
	srv := httpapi.NewServer(mux, nil)
	srv.Addr = addr
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.WithoutCancel(ctx)) }()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
