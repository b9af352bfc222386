// Command checkout is a demo store for keelpay that a person can click
// through: one checkout page with keelpay's hosted card field, saving a
// card, paying with a new or a saved card (3D Secure included), the
// buyer's message in their language when a payment fails, and the
// webhooks the store receives.
//
// Run it next to the reference server:
//
//	go run ./cmd/refserver
//	go run ./examples/checkout -addr localhost:9100 -keelpay http://127.0.0.1:8080
//
// and open http://localhost:9100. The page is on another origin than
// keelpay (localhost and 127.0.0.1 are different origins), as a real
// store's is.
//
// At start it sets up the store of the sandbox application -client-id
// through POST /v1/setup, with webhook_url set to its own /webhooks, and
// rotates both secrets: setup is authenticated by the application's
// credentials, so every start gets a fresh secret key and webhook secret
// and nothing is kept on disk. The store, its cards and its payments stay
// the same across restarts; a previous process's keys stop working, so
// run one checkout per application.
//
// Its server never receives card details: it creates card sessions and
// payment intents with the secret key and hands their ids and client
// secrets to the page; the card field, served by keelpay, sends the card
// to keelpay.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/keelpay/keelpay/httpapi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], log); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		log.Error("checkout stopped", "err", err)
		os.Exit(1)
	}
}

// run serves the checkout until ctx is done.
func run(ctx context.Context, args []string, log *slog.Logger) error {
	fs := flag.NewFlagSet("checkout", flag.ContinueOnError)
	addr := fs.String("addr", "localhost:9100", "listen address")
	keelpayURL := fs.String("keelpay", "http://127.0.0.1:8080", "base URL of the keelpay server")
	clientID := fs.String("client-id", "app_checkout", "sandbox application of the store")
	clientSecret := fs.String("client-secret", "", "its client secret (default: the sandbox's, secret_ + the id's suffix)")
	origin := fs.String("origin", "", "this server's origin as browsers see it (default: http://<addr host>:<port>)")
	integrity := fs.String("integrity", "", "pinned integrity of keelpay.js (default: fetched from keelpay at start)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *clientSecret == "" {
		*clientSecret = "secret_" + strings.TrimPrefix(*clientID, "app_")
	}
	ln, listenOrigin, err := listen(*addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if *origin == "" {
		*origin = listenOrigin
	}
	s, err := newServer(ctx, config{
		keelpay: *keelpayURL, clientID: *clientID, clientSecret: *clientSecret,
		origin: *origin, integrity: *integrity, log: log,
	})
	if err != nil {
		return err
	}
	srv := httpapi.NewServer(s, log)
	log.Info("checkout listening", "url", *origin, "keelpay", s.api.base, "store", s.keys.ID)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// listen listens on addr and returns the origin browsers reach it at: the
// host as given (localhost when none), with the port actually bound.
func listen(addr string) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("-addr: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return ln, "http://" + net.JoinHostPort(host, port), nil
}
