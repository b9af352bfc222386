package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/keelpay/keelpay"
)

// Readiness check bounds: a check waits at most HealthCheckTimeout for the
// database, and its result answers every probe for HealthCacheFor after it
// ended, so that a storm of probes costs the database one round trip a
// second.
const (
	HealthCheckTimeout = 2 * time.Second
	HealthCacheFor     = time.Second
)

// Pinger is what the readiness check asks: storage.Storage has it.
type Pinger interface {
	Ping(ctx context.Context) error
}

// HealthConfig configures [Health].
type HealthConfig struct {
	// Storage is the database the server needs to serve. Nil: no check,
	// the handler answers 200 while the process serves (liveness only).
	Storage Pinger
	// Logger gets a warning when the database stops answering the check
	// and a line when it answers again. Default: slog.Default().
	Logger *slog.Logger
}

// Health is the readiness handler, for the team to mount where its load
// balancer looks (the reference server: /healthz). GET and HEAD answer 200
// {"status":"ok"} while the database answers a ping, and 503
// database_unavailable while it does not (refused, reset, or no answer
// within [HealthCheckTimeout]); other methods 405. Concurrent probes share
// one check and a result is reused for [HealthCacheFor]. Every answer has
// a Request-Id header, as the API's do.
func Health(cfg HealthConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &health{ping: cfg.Storage, log: slog.New(keelpay.NewLogHandler(cfg.Logger.Handler())),
		timeout: HealthCheckTimeout, cacheFor: HealthCacheFor}
}

type health struct {
	ping     Pinger
	log      *slog.Logger
	group    singleflight.Group
	timeout  time.Duration // HealthCheckTimeout; tests shorten it
	cacheFor time.Duration // HealthCacheFor; tests lengthen it

	mu      sync.Mutex
	checked time.Time // when the last check ended; zero before the first
	last    error     // its result
}

func (h *health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := keelpay.NewID(keelpay.PrefixRequest)
	w.Header().Set("Request-Id", id)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorFields{Code: keelpay.CodeMethodNotAllowed,
			Message: "The method is not allowed on this path; see the Allow header."}})
		return
	}
	if err := h.check(keelpay.ContextWithRequestID(r.Context(), id)); err != nil {
		if r.Context().Err() != nil {
			w.WriteHeader(statusClientClosed)
			return
		}
		writeJSON(w, Status(keelpay.CodeDatabaseUnavailable), errorBody{Error: errorFields{Code: keelpay.CodeDatabaseUnavailable,
			Message: "The server cannot reach its database."}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// check returns the result of a check that ended less than HealthCacheFor
// ago, or runs one, shared with the probes that arrive while it runs. A
// probe that goes away stops waiting; the check goes on for the others.
func (h *health) check(ctx context.Context) error {
	if h.ping == nil {
		return nil
	}
	if err, ok := h.cached(); ok {
		return err
	}
	ch := h.group.DoChan("ping", func() (any, error) {
		// A check that ended between the look above and this one
		// answers too.
		if err, ok := h.cached(); ok {
			return nil, err
		}
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
		defer cancel()
		err := h.ping.Ping(pctx)
		h.mu.Lock()
		was := h.last
		failedBefore := !h.checked.IsZero() && was != nil
		h.checked, h.last = time.Now(), err
		h.mu.Unlock()
		switch {
		case err != nil && !failedBefore:
			h.log.WarnContext(pctx, "readiness: the database does not answer", slog.Any("error", err))
		case err == nil && failedBefore:
			h.log.InfoContext(pctx, "readiness: the database answers again")
		}
		return nil, err
	})
	select {
	case res := <-ch:
		return res.Err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cached returns the result of the last check while it is fresh.
func (h *health) cached() (error, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.checked.IsZero() || time.Since(h.checked) >= h.cacheFor {
		return nil, false
	}
	return h.last, true
}
