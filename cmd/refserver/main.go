// Command refserver runs keelpay as a stateful payment service: by default
// on one machine, with an embedded SQLite file, the in-process sandbox
// provider with its test cards, and sandbox mode (insecure webhook URLs
// allowed, the sandbox clock). It needs no setup:
//
//	go run ./cmd/refserver
//
// Flags and their environment variables (a flag wins over its variable):
//
//	-addr         KEELPAY_ADDR         listen address (default 127.0.0.1:8080)
//	-db           KEELPAY_DB           SQLite file path, or a postgres:// URL (default ./keelpay.db)
//	-key-file     KEELPAY_KEY_FILE     file of encryption keys (default for SQLite: <db>.key, created if missing)
//	-log-format   KEELPAY_LOG_FORMAT   text or json (default text)
//	-provider     KEELPAY_PROVIDER     sandbox (the default); stripe only in the Stripe-enabled
//	                                   build: see "With Stripe" below
//	-sandbox-url  KEELPAY_SANDBOX_URL  use the sandbox of the reference server at this URL
//	-sandbox-db   KEELPAY_SANDBOX_DB   SQLite file of the sandbox this server owns (default: for -db
//	                                   DIR/NAME.db, DIR/NAME.sandbox.db; for PostgreSQL,
//	                                   ./postgres-DATABASE.sandbox.db, with -SCHEMA added
//	                                   for a search_path); not used with -sandbox-url
//	-pprof        KEELPAY_PPROF_ADDR   serve the Go runtime's profiles (net/http/pprof) at this
//	                                   address, on a listener apart from the API (default off)
//	-retention    KEELPAY_RETENTION    how long events whose delivery is over are kept: days
//	                                   (30d), a duration (720h) or forever (default 30d)
//	-card-session-retention  KEELPAY_CARD_SESSION_RETENTION
//	                                   how long card sessions that saved no card are kept after
//	                                   they expired (default 7d)
//	-allow-async-standby  KEELPAY_POSTGRES_ALLOW_ASYNC_STANDBY=1
//	                                   start on a PostgreSQL primary with standbys its commits
//	                                   do not wait for (refused by default: a failover to such
//	                                   a standby loses the latest commits; docs/operating.md)
//	-limit-payments, -limit-confirms, -limit-writes, -limit-reads, -limit-browser
//	              KEELPAY_LIMIT_*      requests of each class worked on at once; more wait up to
//	                                   -limit-wait (behind -limit-queue), then are answered 429
//	                                   rate_limited with Retry-After (-retry-after); -1 turns a
//	                                   class's limit off; refserver -h gives the defaults
//	                                   (docs/operating.md, "Overload")
//	-new-key                           print a new encryption key and exit
//
// Secrets in the database are sealed with the keys of KEELPAY_ENCRYPTION_KEY
// (id:base64key, comma-separated, the current one first) or of the key
// file. With neither, a SQLite database gets a key file beside it
// (keelpay.db.key, mode 0600), created on first start and logged once; back
// it up, apart from the database. A PostgreSQL database needs a key given:
// docs/security.md explains keys and their rotation.
//
// It logs to stderr, is ready when GET /healthz answers 200, and shuts down
// gracefully on SIGINT or SIGTERM.
//
// Traces are exported over OTLP/HTTP when the standard OpenTelemetry
// variables ask for it (OTEL_EXPORTER_OTLP_ENDPOINT, or
// OTEL_TRACES_EXPORTER=otlp), under the service name keelpay-refserver
// unless OTEL_SERVICE_NAME gives another, and flushed at shutdown; without
// them nothing is traced. docs/operating.md ("Tracing") lists the spans.
//
// # With Stripe
//
// This command has the sandbox only: keelpay's module does not require the
// Stripe adapter's, so that a store using keelpay's library never fetches
// stripe-go. The Stripe-enabled reference server is the command
// github.com/keelpay/keelpay/cmd/refserver-stripe, a module of its own
// that requires keelpay's and the adapter's, with the same flags,
// variables and banner; this one
// refuses -provider stripe, naming it. From a checkout of keelpay:
//
//	cd cmd/refserver-stripe && go run . -provider stripe
//
// With -provider stripe the payment provider is the Stripe adapter of
// package provider/stripe, and nothing of sandbox mode is served: no
// /sandbox/ routes, no sandbox clock, and only https webhook URLs to public
// hosts. The account and its secrets come from the environment only, and
// the server refuses to start, naming each one missing, without them:
//
//	KEELPAY_STRIPE_ACCOUNT         the Stripe account id (acct_...)
//	KEELPAY_STRIPE_KEY             a restricted key of it (rk_live_... or rk_test_...)
//	KEELPAY_STRIPE_WEBHOOK_SECRET  the signing secret of its webhook endpoint (whsec_...)
//	KEELPAY_PUBLIC_URL             the server's public https URL
//	KEELPAY_STRIPE_API_URL         Stripe's API (default https://api.stripe.com); for a
//	                               fake of Stripe or stripe-mock in tests; shown in the
//	                               banner and the start's log line when set
//	KEELPAY_STRIPE_PUBLISHABLE_KEY optional: the account's pk_live_... or pk_test_..., so
//	                               that the card field captures cards with Stripe.js
//	KEELPAY_STRIPE_JS_URL          optional: Stripe.js's URL (default
//	                               https://js.stripe.com/v3/); for a test's stand-in
//	KEELPAY_STRIPE_RAW_CARD_DATA   1 to send card numbers typed into keelpay's own card
//	                               field to Stripe: only for accounts enabled for raw
//	                               card data APIs, and it puts the server in PCI DSS
//	                               scope (SAQ D); off, a card number is refused
//
// A call Stripe does not answer (unreachable, timed out, 5xx) is answered
// 503 provider_api_unavailable, or leaves a payment processing, and is
// logged as "provider unavailable" with its cause, the secrets removed.
//
// Stripe sends buyers back after 3D Secure to KEELPAY_PUBLIC_URL +
// /stripe/return; point the account's webhook endpoint at
// KEELPAY_PUBLIC_URL + /stripe/webhook. A store is set up with POST
// /v1/setup, client_id the account id and client_secret the key. The
// encryption keys follow the rules above: a SQLite database gets a key file
// beside it when none is given, a PostgreSQL database needs one given.
// -sandbox-url and -sandbox-db are refused.
//
// # Backups
//
//	refserver backup [-db PATH] [-key-file FILE] [-sandbox-db PATH] DEST
//
// (the flags may also follow DEST)
// copies a SQLite database (and the sandbox's file beside it, when there is
// one, to DEST's NAME.sandbox.db) while a server serves from it, with
// SQLite's VACUUM INTO: one consistent snapshot, checked with PRAGMA
// integrity_check and opened with the same encryption keys as the server
// (the same flags and variables choose them). The keys are not copied:
// back them up apart. docs/operating.md explains backups of SQLite and
// PostgreSQL.
//
// # Several processes on one PostgreSQL database
//
// Any number of reference servers can share one PostgreSQL database (give
// each the same -db URL and the same encryption key; keelpay's tables go to
// the schema "keelpay" unless the URL's search_path=<schema> names another).
// They must also share one payment provider, as
// they would a real one. One process, started without -sandbox-url, owns
// the sandbox: it serves the 3D Secure pages at /sandbox/3ds/ and the
// sandbox to the others at /sandbox/provider/ (package httpprovider's
// protocol); every other process is started with -sandbox-url set to the
// owner's URL. Start the owner first: until it answers, the others' calls
// to the provider fail as a provider that cannot be reached does. A 3D
// Secure challenge started through any process is answered on the owner's
// page, and the owner finishes the payment in the shared database.
//
// Every process keeps its own sandbox clock. POST /sandbox/clock moves only
// the clock of the process it reaches: call it on the owner first (the
// sandbox resolves unknown outcomes and expires challenges on the owner's
// clock), then on every other process, with the same advance_seconds.
// Clocks that disagree lose nothing, but the process that is ahead takes
// over webhook deliveries whose lease it thinks has lapsed, and those are
// sent once more.
package main

import (
	"os"

	// Named server: the tests of this package keep the built binary's
	// path in a variable named refserver.
	server "github.com/keelpay/keelpay/refserver"
)

func main() {
	os.Exit(server.Main(os.Args[1:], os.Stdout, os.Stderr))
}
