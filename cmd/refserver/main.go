// Command refserver runs keelpay as a stateful payment service on one
// machine: an embedded SQLite file, the in-process sandbox provider with its
// test cards, and sandbox mode (insecure webhook URLs allowed, the sandbox
// clock). It needs no setup:
//
//	go run ./cmd/refserver
//
// Flags and their environment variables (a flag wins over its variable):
//
//	-addr        KEELPAY_ADDR        listen address (default 127.0.0.1:8080)
//	-db          KEELPAY_DB          SQLite file path (default ./keelpay.db)
//	-log-format  KEELPAY_LOG_FORMAT  text or json (default text)
//
// It logs to stderr, is ready when GET /healthz answers 200, and shuts down
// gracefully on SIGINT or SIGTERM.
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
		fmt.Fprintln(os.Stderr, "refserver:", err)
		os.Exit(1)
	}
}
