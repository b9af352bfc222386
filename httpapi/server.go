package httpapi

import (
	"log/slog"
	"net/http"
	"time"
)

// Time-outs of NewServer: the reference server's and the examples', so
// that what people copy holds up against slow clients (a client that sends
// its headers or body a byte at a time is cut off, and an idle keep-alive
// connection is closed).
const (
	ServerReadHeaderTimeout = 10 * time.Second
	ServerReadTimeout       = 30 * time.Second
	ServerWriteTimeout      = 30 * time.Second
	ServerIdleTimeout       = 2 * time.Minute
)

// NewServer returns an http.Server for h with the Server... time-outs, and
// its own errors (TLS handshakes, bad requests) logged at warning level to
// log (nil: slog.Default()). Set Addr, or call Serve with a listener.
func NewServer(h http.Handler, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.Default()
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ServerReadHeaderTimeout,
		ReadTimeout:       ServerReadTimeout,
		WriteTimeout:      ServerWriteTimeout,
		IdleTimeout:       ServerIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
