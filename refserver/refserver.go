// Package refserver is the reference server of keelpay: the whole of the
// command refserver (flags, storage, the sandbox, backups, tracing), behind
// one entry point, Main, that each command's main calls.
//
// It is a package, not only a command, so that the reference server can be
// built with another payment provider: keelpay's own cmd/refserver has the
// sandbox only, and the module cmd/refserver-stripe, which requires
// keelpay's and the Stripe adapter's, registers the adapter with
// WithProvider. keelpay's module then never requires the adapter's, and a
// store that imports keelpay's library never resolves stripe-go. A team
// with an adapter of its own can build the same server around it; the
// flags, variables and logs are the command's (go doc
// github.com/keelpay/keelpay/cmd/refserver), and Provider is the only
// extension point.
package refserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/keelpay/keelpay/provider"
)

// Main runs the reference server with the command line's args (without
// the program name) and the process's environment until SIGINT or
// SIGTERM, and returns the exit code: 0, or 1 after printing the error to
// stderr as "refserver: ...".
func Main(args []string, stdout, stderr io.Writer, opts ...Option) int {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, args, os.Getenv, stdout, stderr, o.providers...); err != nil {
		fmt.Fprintln(stderr, "refserver:", err)
		return 1
	}
	return 0
}

// An Option changes what Main serves.
type Option func(*options)

type options struct {
	providers []Provider
}

// WithProvider adds a payment provider that -provider p.Name (or
// KEELPAY_PROVIDER) chooses instead of the sandbox.
func WithProvider(p Provider) Option {
	return func(o *options) { o.providers = append(o.providers, p) }
}

// A Provider is a payment provider other than the sandbox, linked in by a
// command. Chosen, nothing of sandbox mode is served: no /sandbox/ routes,
// no sandbox clock, and only https webhook URLs to public hosts.
type Provider struct {
	// Name is the value of -provider that chooses it.
	Name string
	// Configure reads the provider's settings once the flags are parsed
	// and before anything is opened. Secrets come from getenv only, never
	// from flags, which other users of the machine can read. Its error
	// stops the start and is printed as it is: it should name everything
	// missing at once.
	Configure func(s Settings, getenv func(string) string) (Configured, error)
}

// Settings are what the flags and their variables chose that a
// provider's configuration may depend on, as given (SandboxDB has no
// default filled in).
type Settings struct {
	// DB is -db: a SQLite file path or a postgres:// URL (IsPostgres).
	DB string
	// KeyFile is -key-file; with KEELPAY_ENCRYPTION_KEY unset, a
	// PostgreSQL database needs it.
	KeyFile string
	// SandboxURL and SandboxDB belong to the sandbox: a provider refuses
	// them.
	SandboxURL, SandboxDB string
}

// Configured is a provider ready to be made.
type Configured interface {
	// New makes the provider, before the database is opened; it makes no
	// call to the provider. log is the server's logger, whose lines carry
	// the request_id of the request they are written for.
	New(log *slog.Logger) (provider.Provider, error)
	// Routes are the provider's own routes (its webhooks, the buyer's
	// return from 3D Secure) by http.ServeMux pattern, called once after
	// New. Every answer gets a Request-Id, as the API's do.
	Routes() map[string]http.Handler
	// Banner writes to stdout, once the server listens at baseURL, what
	// the operator needs to set up a store; db is the database, its
	// password hidden. It never prints a secret.
	Banner(w io.Writer, baseURL, db string)
	// Listening are the attributes of the start's "listening" log line
	// after url and db.
	Listening() []slog.Attr
}

// IsPostgres reports whether dsn is a PostgreSQL URL (postgres:// or
// postgresql://), which the server opens as PostgreSQL rather than as a
// SQLite file.
func IsPostgres(dsn string) bool { return isPostgres(dsn) }

// RedactDSN hides the password of a database URL, for printing and logs.
func RedactDSN(dsn string) string { return redactDSN(dsn) }
