package refserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/internal/eventshook"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/httpprovider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// config is what flags and environment variables choose.
type config struct {
	addr       string
	db         string
	keyFile    string
	logFormat  string
	newKey     bool
	pprofAddr  string
	provider   string
	sandboxURL string
	sandboxDB  string
	// linked is the provider -provider chose when it is not the sandbox.
	linked Configured
	// retention is how long events whose delivery is over are kept, and
	// sessionRetention how long card sessions that saved no card are kept
	// after they expired (service.KeepForever: for good).
	retention        time.Duration
	sessionRetention time.Duration
	// allowAsyncStandby lets the server start on a PostgreSQL primary
	// whose standbys its commits do not wait for.
	allowAsyncStandby bool
	admission         httpapi.AdmissionConfig // -limit-* and -retry-after (admission.go)
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer, providers ...Provider) (config, error) {
	fs := flag.NewFlagSet("refserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: refserver [flags]                  serve keelpay (sandbox mode unless -provider stripe)\n"+
			"       refserver backup [flags] DEST     copy a SQLite database (and its sandbox file) while a server serves from it;\n"+
			"                                         refserver backup -h lists its flags\n"+
			"       refserver -new-key                print a new encryption key\n\nflags:\n")
		fs.PrintDefaults()
	}
	var c config
	fs.StringVar(&c.addr, "addr", envOr(getenv, "KEELPAY_ADDR", "127.0.0.1:8080"), "listen address (env KEELPAY_ADDR)")
	fs.StringVar(&c.db, "db", envOr(getenv, "KEELPAY_DB", "keelpay.db"), "SQLite file path or postgres:// URL (env KEELPAY_DB)")
	fs.StringVar(&c.keyFile, "key-file", getenv("KEELPAY_KEY_FILE"),
		"file with the encryption keys (id:base64key, the current one first) (env KEELPAY_KEY_FILE); default for SQLite: the database path + .key, created if missing")
	fs.BoolVar(&c.newKey, "new-key", false, "print a new random encryption key (id:base64key) and exit")
	fs.StringVar(&c.pprofAddr, "pprof", getenv("KEELPAY_PPROF_ADDR"),
		"serve the Go runtime's profiles (net/http/pprof) at this address, apart from the API (env KEELPAY_PPROF_ADDR); default off")
	fs.StringVar(&c.logFormat, "log-format", envOr(getenv, "KEELPAY_LOG_FORMAT", "text"), "log format, text or json (env KEELPAY_LOG_FORMAT)")
	fs.StringVar(&c.provider, "provider", envOr(getenv, "KEELPAY_PROVIDER", "sandbox"),
		"payment provider: sandbox, or stripe with KEELPAY_STRIPE_ACCOUNT, KEELPAY_STRIPE_KEY, KEELPAY_STRIPE_WEBHOOK_SECRET and KEELPAY_PUBLIC_URL set (env KEELPAY_PROVIDER)")
	fs.StringVar(&c.sandboxURL, "sandbox-url", getenv("KEELPAY_SANDBOX_URL"),
		"use the sandbox of the reference server at this URL instead of owning one (env KEELPAY_SANDBOX_URL)")
	fs.StringVar(&c.sandboxDB, "sandbox-db", getenv("KEELPAY_SANDBOX_DB"),
		"SQLite file of the sandbox this server owns (env KEELPAY_SANDBOX_DB; default next to a SQLite -db, NAME.sandbox.db; for PostgreSQL ./postgres-DATABASE[-SCHEMA].sandbox.db)")
	fs.BoolVar(&c.allowAsyncStandby, "allow-async-standby", getenv("KEELPAY_POSTGRES_ALLOW_ASYNC_STANDBY") == "1",
		"start on a PostgreSQL primary with standbys that commits do not wait for, whose failover loses the latest commits (env KEELPAY_POSTGRES_ALLOW_ASYNC_STANDBY=1; see docs/operating.md)")
	var retention, sessionRetention string
	fs.StringVar(&retention, "retention", envOr(getenv, "KEELPAY_RETENTION", "30d"),
		"how long events whose delivery is over are kept: days (30d), a duration (720h) or forever (env KEELPAY_RETENTION)")
	fs.StringVar(&sessionRetention, "card-session-retention", envOr(getenv, "KEELPAY_CARD_SESSION_RETENTION", "7d"),
		"how long card sessions that saved no card are kept after they expired: days, a duration or forever (env KEELPAY_CARD_SESSION_RETENTION)")
	if err := admissionFlags(fs, getenv, &c.admission); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.retention, err = parseRetention(retention); err != nil {
		return c, fmt.Errorf("-retention: %w", err)
	}
	if c.sessionRetention, err = parseRetention(sessionRetention); err != nil {
		return c, fmt.Errorf("-card-session-retention: %w", err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return c, fmt.Errorf("-log-format must be text or json")
	}
	if c.provider == "sandbox" {
		if c.sandboxDB == "" {
			c.sandboxDB = defaultSandboxDB(c.db)
		}
		return c, nil
	}
	for _, p := range providers {
		if p.Name == c.provider {
			c.linked, err = p.Configure(Settings{DB: c.db, KeyFile: c.keyFile, SandboxURL: c.sandboxURL, SandboxDB: c.sandboxDB}, getenv)
			return c, err
		}
	}
	if c.provider == "stripe" {
		return c, errors.New("-provider stripe: this refserver is built without the Stripe adapter; " +
			"the Stripe-enabled reference server is the command " + stripeCommand +
			" (in a checkout of keelpay: cd cmd/refserver-stripe && go run . -provider stripe)")
	}
	return c, fmt.Errorf("-provider must be sandbox or stripe, not %q", c.provider)
}

// stripeCommand is the reference server with the Stripe adapter linked
// in. It is built by the adapter's own module, so that keelpay's module
// never requires the adapter, nor stripe-go.
const stripeCommand = "github.com/keelpay/keelpay/cmd/refserver-stripe"

// defaultSandboxDB is where the owned sandbox keeps its state when
// -sandbox-db is not given: next to a SQLite database, with the database's
// name and .sandbox.db (keelpay.db: keelpay.sandbox.db). For PostgreSQL it
// is in the working directory, named after the database and the schema of
// the URL's search_path (postgres-shop.sandbox.db,
// postgres-shop-payments.sandbox.db), so that it is never the file of a
// SQLite server started in the same folder (keelpay.sandbox.db), nor that
// of a server of another PostgreSQL database.
func defaultSandboxDB(db string) string {
	if isPostgres(db) {
		name := "postgres"
		if u, err := url.Parse(db); err == nil {
			if d := fileSafe(strings.TrimPrefix(u.Path, "/")); d != "" {
				name += "-" + d
			}
			if sp := fileSafe(u.Query().Get("search_path")); sp != "" {
				name += "-" + sp
			}
		}
		return name + ".sandbox.db"
	}
	base := filepath.Base(db)
	return filepath.Join(filepath.Dir(db), strings.TrimSuffix(base, filepath.Ext(base))+".sandbox.db")
}

// fileSafe keeps the letters, digits, _ and - of s (a database or schema
// name) for a file name, at most 63 of them.
func fileSafe(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteRune(c)
		}
		if b.Len() == 63 {
			break
		}
	}
	return b.String()
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
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
// postgresql:// URL, and a SQLite file for anything else. tp, when set,
// traces PostgreSQL's statements; allowAsyncStandby is
// postgres.Config.AllowAsyncStandby.
func openStorage(ctx context.Context, dsn string, kr *keyring.Keyring, tp trace.TracerProvider, allowAsyncStandby bool) (storage.Storage, error) {
	if isPostgres(dsn) {
		return postgres.Open(ctx, postgres.Config{DSN: dsn, Keyring: kr, TracerProvider: tp, AllowAsyncStandby: allowAsyncStandby})
	}
	return sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: dsn})
}

// keyFileSuffix names the key file the reference server creates beside a
// SQLite database: keelpay.db -> keelpay.db.key.
const keyFileSuffix = ".key"

// loadKeyring finds the encryption keys: KEELPAY_ENCRYPTION_KEY, else the
// key file of -key-file, else (SQLite only) the key file beside the
// database. A PostgreSQL database is shared by several processes that must
// all have the same keys, so for it a key must be given: one process making
// up its own would lock the others out.
//
// When the key file beside a SQLite database is missing, a new key is made
// but not written: pending is the file to write, which run writes only once
// the database has opened with that key. A start that fails before (a
// restored copy of a database whose key file was left behind, a busy
// address) leaves no key file that does not belong to the database.
func loadKeyring(cfg config, getenv func(string) string) (kr *keyring.Keyring, pending *pendingKeyFile, err error) {
	env := getenv("KEELPAY_ENCRYPTION_KEY")
	switch {
	case env != "" && cfg.keyFile != "":
		return nil, nil, errors.New("give the encryption keys either in KEELPAY_ENCRYPTION_KEY or in a key file (-key-file, KEELPAY_KEY_FILE), not both")
	case env != "":
		kr, err := keyring.Parse(env)
		if err != nil {
			return nil, nil, fmt.Errorf("KEELPAY_ENCRYPTION_KEY: %w", err)
		}
		return kr, nil, nil
	case cfg.keyFile != "":
		kr, err := keyring.ReadFile(cfg.keyFile)
		return kr, nil, err
	case isPostgres(cfg.db):
		return nil, nil, errors.New("a PostgreSQL database needs an encryption key, the same for every process on it: " +
			"set KEELPAY_ENCRYPTION_KEY or -key-file (refserver -new-key prints a new key; see docs/security.md)")
	}
	path := cfg.db + keyFileSuffix
	kr, err = keyring.ReadFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return kr, nil, err
	}
	k, err := keyring.Generate("k1")
	if err != nil {
		return nil, nil, err
	}
	if kr, err = keyring.New(k); err != nil {
		return nil, nil, err
	}
	return kr, &pendingKeyFile{path: path, key: k}, nil
}

// pendingKeyFile is a key file loadKeyring made a key for but did not
// write.
type pendingKeyFile struct {
	path string
	key  keyring.Key
}

// write creates the file, mode 0600, as keyring.WriteNewFile does; it
// fails if the file appeared meanwhile.
func (p *pendingKeyFile) write() error {
	f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString("# keelpay encryption keys (id:base64key), the current key first; see docs/security.md.\n" + keyring.Format(p.key) + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		os.Remove(p.path)
		return err
	}
	return syncDir(filepath.Dir(p.path))
}

// run serves until ctx is done, then shuts down gracefully.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, providers ...Provider) error {
	if len(args) > 0 && args[0] == "backup" {
		return runBackup(ctx, args[1:], getenv, stdout, stderr)
	}
	cfg, err := parseConfig(args, getenv, stderr, providers...)
	if err != nil {
		return err
	}
	if cfg.newKey {
		k, err := keyring.Generate("k" + time.Now().UTC().Format("20060102"))
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, keyring.Format(k))
		return nil
	}
	log := newLogger(cfg.logFormat, stderr)
	machine, err := machineClock(getenv, cfg.provider == "sandbox", log)
	if err != nil {
		return err
	}
	// Sandbox mode is everything but a linked provider: insecure webhook
	// URLs, the sandbox tools, and a service clock that POST
	// /sandbox/clock moves forward, which the sandbox provider shares.
	sandboxMode := cfg.provider == "sandbox"
	clock := &keelpay.OffsetClock{}
	var serviceClock keelpay.Clock // nil: the system clock
	if sandboxMode {
		serviceClock = clock
	}
	// One process owns the sandbox (sb) and serves it to the others, which
	// reach it over HTTP: so a challenge, an unknown outcome or a refund
	// started by any process can be answered by any other, as with a real
	// provider.
	var (
		prov provider.Provider
		sb   *sandbox.Sandbox
	)
	switch {
	case !sandboxMode:
		if prov, err = cfg.linked.New(log); err != nil {
			return err
		}
	case cfg.sandboxURL != "":
		remote, err := httpprovider.New(httpprovider.Config{BaseURL: cfg.sandboxURL})
		if err != nil {
			return fmt.Errorf("-sandbox-url: %w", err)
		}
		prov = remote
	}

	kr, pendingKey, err := loadKeyring(cfg, getenv)
	if err != nil {
		return fmt.Errorf("encryption key: %w", err)
	}
	// Traces are exported only when the OTEL_* variables ask for it; what
	// is buffered is flushed at the very end, after the background work
	// has stopped.
	tp, err := newTracerProvider(ctx, getenv)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	var tracerProvider trace.TracerProvider // nil: nothing traced
	if tp != nil {
		tracerProvider = tp
		defer func() {
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := tp.Shutdown(flushCtx); err != nil {
				log.Warn("traces not all exported", slog.Any("error", err))
			}
		}()
		log.Info("exporting traces over OTLP/HTTP")
	}
	db, err := openStorage(ctx, cfg.db, kr, tracerProvider, cfg.allowAsyncStandby)
	if err != nil {
		if pendingKey != nil {
			return fmt.Errorf("open database: %w (there is no key file %s, so a new key was tried and not saved: "+
				"put the key file that belongs to this database there, or give -key-file or KEELPAY_ENCRYPTION_KEY)", err, pendingKey.path)
		}
		return fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	if pg, ok := db.(*postgres.DB); ok {
		if r := pg.Replication(); r.Standbys > 0 && (!r.Waits || r.Async+r.Unknown > 0) {
			log.Warn("the database has standbys that commits do not wait for: a failover to one of them loses the latest commits (docs/operating.md)",
				slog.Int("standbys", r.Standbys), slog.Int("async", r.Async), slog.Int("unknown", r.Unknown), slog.Bool("commits_wait", r.Waits))
		}
	}
	if pendingKey != nil {
		// The database opened with the new key: from now on it is this
		// database's key.
		if err := pendingKey.write(); err != nil {
			return fmt.Errorf("encryption key: write the new key file: %w", err)
		}
		log.Warn("created a new encryption key file beside the database: back it up with the database, and keep it apart from copies of the database; without it the stored secrets cannot be read",
			slog.String("key_file", pendingKey.path))
	}

	if sandboxMode {
		// Servers on one PostgreSQL database keep to its clock, and move
		// it (service.DatabaseClock; docs/operating.md, "Clocks").
		if clock.Base, err = service.BaseClock(ctx, db, machine); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return err
	}
	baseURL := "http://" + ln.Addr().String()

	if prov == nil {
		// The sandbox keeps every answer in its own file, so that a
		// restart after a crash finds every charge, refund, challenge and
		// unknown outcome it had.
		sb, err = sandbox.Open(ctx, sandbox.Config{BaseURL: baseURL, Clock: clock, Path: cfg.sandboxDB})
		if err != nil {
			ln.Close()
			return fmt.Errorf("open sandbox database: %w", err)
		}
		defer sb.Close()
		prov = sb
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// One Service is the whole of keelpay; sandbox mode accepts and
	// delivers to http and private webhook URLs, and its deliveries
	// misbehave on request (POST /sandbox/webhooks/faults).
	svc, err := service.New(service.Config{
		Admission:             cfg.admission,
		AllowInsecureWebhooks: sandboxMode,
		Clock:                 serviceClock,
		Logger:                log,
		Metrics:               metrics,
		Provider:              prov,
		Retention:             service.RetentionConfig{CardSessions: cfg.sessionRetention, Events: cfg.retention},
		Storage:               db,
		TracerProvider:        tracerProvider,
	})
	if err != nil {
		ln.Close()
		return err
	}
	faults := sandbox.NewWebhookFaults()
	if sandboxMode {
		eventshook.SetInterceptor(svc.Dispatcher(), faults)
	}
	pay, ref := svc.Payments(), svc.Refunds()

	mux := http.NewServeMux()
	mux.Handle("/healthz", svc.HealthHandler())
	mux.Handle("GET /metrics", withRequestID(svc.MetricsHandler()))
	if sb != nil {
		mux.Handle("/sandbox/3ds/", withRequestID(sb.ChallengeHandler()))
		mux.Handle("/sandbox/elements/", withRequestID(sb.ElementHandler()))
		mux.Handle("/sandbox/provider/", withRequestID(sb.APIHandler()))
	}
	if sandboxMode {
		// After a move of the sandbox clock, what became due happens before
		// the answer: expiry, 3D Secure time-outs, reconciliation, retention;
		// the resulting webhooks follow at once.
		mux.Handle("/sandbox/clock", withRequestID(sandboxClock(clock, log, func(ctx context.Context) error {
			defer svc.Dispatcher().Notify()
			var settled error
			if sb != nil {
				// The sandbox's own due changes first (a refund that
				// fails later), with their notifications.
				settled = sb.Settle(ctx)
			}
			return errors.Join(settled, pay.Expire(ctx), pay.Reconcile(ctx), ref.Reconcile(ctx), svc.Purge(ctx))
		})))
		sbx := &sandboxAPI{webhookFaults: faults, log: log, stores: svc.Stores(),
			trigger: &trigger{clock: clock, events: svc.Events(), payments: pay, refunds: ref}}
		mux.Handle("/sandbox/webhooks/faults", withRequestID(sbx.authed("GET, POST, DELETE", sbx.faults)))
		mux.Handle("/sandbox/trigger", withRequestID(sbx.authed("POST", sbx.triggerEvent)))
		console := withRequestID(consoleHandler())
		for _, p := range []string{"GET /sandbox/{$}", "GET /sandbox/console.js", "GET /sandbox/console.css"} {
			mux.Handle(p, console)
		}
	} else {
		for pattern, h := range cfg.linked.Routes() {
			mux.Handle(pattern, withRequestID(h))
		}
	}
	mux.Handle("/", svc.Handler())

	// Background work stops after the HTTP server has drained, and lets
	// deliveries and provider calls under way finish.
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
	if sb != nil {
		// The sandbox has no time of its own: what became due on its
		// clock (a refund or a void that fails later) happens when it is
		// settled, here as often as the reconciler runs, and with every
		// move of the sandbox clock.
		settleCtx, stopSettle := context.WithCancel(context.WithoutCancel(ctx))
		defer stopSettle()
		go func() {
			t := time.NewTicker(service.ReconcileIntervalDefault)
			defer t.Stop()
			for {
				select {
				case <-settleCtx.Done():
					return
				case <-t.C:
					if err := sb.Settle(settleCtx); err != nil {
						log.Warn("sandbox: settle what became due", slog.Any("error", err))
					}
				}
			}
		}()
	}
	srv := httpapi.NewServer(mux, log)
	if cfg.pprofAddr != "" {
		stopProfiles, err := serveProfiles(cfg.pprofAddr, stdout, log)
		if err != nil {
			ln.Close()
			return fmt.Errorf("-pprof: %w", err)
		}
		defer stopProfiles()
	}

	if sandboxMode {
		sandboxAt := "its own sandbox in " + cfg.sandboxDB + ", served at " + baseURL + "/sandbox/provider/"
		if sb == nil {
			sandboxAt = "the sandbox at " + cfg.sandboxURL
		}
		fmt.Fprintf(stdout, "keelpay reference server listening on %s (sandbox mode: %s; database %s)\n\n", baseURL, sandboxAt, redactDSN(cfg.db))
		fmt.Fprintf(stdout, "Sandbox console: %s/sandbox/\n\n", baseURL)
		fmt.Fprintf(stdout, "Set up a sandbox store:\n\n  curl -s -X POST %s/v1/setup -H 'Content-Type: application/json' \\\n"+
			"    -d '{\"client_id\":\"app_demo\",\"client_secret\":\"secret_demo\",\"webhook_url\":\"http://127.0.0.1:9000/webhooks\"}'\n\n", baseURL)
		log.Info("listening", slog.String("url", baseURL), slog.String("db", redactDSN(cfg.db)), slog.String("sandbox", sandboxAt))
	} else {
		cfg.linked.Banner(stdout, baseURL, redactDSN(cfg.db))
		attrs := append([]any{slog.String("url", baseURL), slog.String("db", redactDSN(cfg.db))}, attrsOf(cfg.linked.Listening())...)
		log.Info("listening", attrs...)
	}

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

// attrsOf is attrs as the arguments of a slog call.
func attrsOf(attrs []slog.Attr) []any {
	args := make([]any, len(attrs))
	for i, a := range attrs {
		args[i] = a
	}
	return args
}

// serveProfiles serves net/http/pprof at addr on a listener of its own, so
// that profiles are never reachable through the API's address. It prints
// the address as the API's banner does; stop closes it.
func serveProfiles(addr string, stdout io.Writer, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// A CPU profile or trace runs for as long as its seconds ask; no
	// write time-out.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/debug/pprof/"
	fmt.Fprintf(stdout, "profiles (net/http/pprof) at %s\n", url)
	log.Warn("serving the Go runtime's profiles: keep this address private", slog.String("url", url))
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}
