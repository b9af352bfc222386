// Command refserver-stripe serves keelpay's API, like the reference server
// (cmd/refserver of the keelpay module), with the Stripe adapter as its
// payment provider. It lives in the adapter's module because the keelpay
// module does not depend on stripe-go, so cmd/refserver cannot link the
// adapter.
//
//	-addr        KEELPAY_ADDR        listen address (default 127.0.0.1:8080)
//	-db          KEELPAY_DB          SQLite file path, or a postgres:// URL (default ./keelpay.db)
//	-key-file    KEELPAY_KEY_FILE    file of encryption keys; or KEELPAY_ENCRYPTION_KEY
//	-log-format  KEELPAY_LOG_FORMAT  text or json (default text)
//
// The Stripe account and its keys come from the environment only, and the
// server refuses to start, naming each one missing, without them:
//
//	KEELPAY_STRIPE_ACCOUNT         the Stripe account id (acct_...)
//	KEELPAY_STRIPE_KEY             a restricted key of it (rk_live_... or rk_test_...)
//	KEELPAY_STRIPE_WEBHOOK_SECRET  the signing secret of its webhook endpoint (whsec_...)
//	KEELPAY_PUBLIC_URL             the server's public https URL
//
// Stripe sends buyers back after 3D Secure to KEELPAY_PUBLIC_URL +
// /stripe/return; point the account's webhook endpoint at
// KEELPAY_PUBLIC_URL + /stripe/webhook. A store is set up with POST
// /v1/setup, client_id the account id and client_secret the key. Unlike
// the reference server it has no sandbox tools, accepts only https
// webhook URLs, and never makes up an encryption key: give one.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "refserver-stripe:", err)
		os.Exit(1)
	}
}
