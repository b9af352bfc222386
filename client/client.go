package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
)

// Defaults of [Config].
const (
	// DefaultMaxAttempts is how many times one call is sent at most,
	// the first try included.
	DefaultMaxAttempts = 4
	// DefaultBackoffInitial is the wait before the second try after a 500
	// or a network error; it doubles with every further try.
	DefaultBackoffInitial = 500 * time.Millisecond
	// DefaultBackoffMax caps the backoff.
	DefaultBackoffMax = 8 * time.Second
	// DefaultMaxRetryAfter is the longest Retry-After the client waits
	// for on its own; a longer one is returned as the error.
	DefaultMaxRetryAfter = time.Minute
	// DefaultTimeout is the time-out of the default HTTP client, per
	// try. A confirm answers within 20 seconds (docs/api.md).
	DefaultTimeout = 60 * time.Second
)

// maxResponse is the largest answer the client reads.
const maxResponse = 8 << 20

// Config is how a [Client] talks to keelpay. The zero value of each field
// is its default.
type Config struct {
	// BaseURL is where the API is served, without /v1
	// (https://pay.example.com, or keelpaytest's Kit.URL). Required.
	BaseURL string
	// SecretKey is the store's secret key (sk_...). It may be empty for a
	// client that only calls [Client.Setup] without a store's key.
	SecretKey string
	// HTTPClient sends the requests. Default: a client with
	// [DefaultTimeout].
	HTTPClient *http.Client
	// UserAgent is sent as User-Agent. Default "keelpay-go/" and
	// keelpay.Version.
	UserAgent string
	// MaxAttempts is how many tries one call makes at most, the first
	// included. Default [DefaultMaxAttempts]; 1 turns retries off.
	MaxAttempts int
	// BackoffInitial and BackoffMax shape the wait after a 500 or a
	// network error: BackoffInitial, then doubled for every further try,
	// never more than BackoffMax. Defaults [DefaultBackoffInitial] and
	// [DefaultBackoffMax].
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for
	// before it repeats a call; an answer asking for longer is returned
	// as the error (its RetryAfter says how long). Default
	// [DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration
	// Sleep waits d or until ctx is done, and returns ctx.Err() in the
	// latter case. Tests replace it to see the waits without waiting.
	// Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// NewIdempotencyKey makes the Idempotency-Key of a POST whose params
	// name none. Default: "kpgo_" and 32 random hex digits.
	NewIdempotencyKey func() string
}

// Option changes the [Config] that [New] builds.
type Option func(*Config)

// WithHTTPClient sets [Config.HTTPClient].
func WithHTTPClient(hc *http.Client) Option { return func(c *Config) { c.HTTPClient = hc } }

// WithUserAgent sets [Config.UserAgent].
func WithUserAgent(ua string) Option { return func(c *Config) { c.UserAgent = ua } }

// WithMaxAttempts sets [Config.MaxAttempts].
func WithMaxAttempts(n int) Option { return func(c *Config) { c.MaxAttempts = n } }

// WithBackoff sets [Config.BackoffInitial] and [Config.BackoffMax].
func WithBackoff(initial, maximum time.Duration) Option {
	return func(c *Config) { c.BackoffInitial, c.BackoffMax = initial, maximum }
}

// WithMaxRetryAfter sets [Config.MaxRetryAfter].
func WithMaxRetryAfter(d time.Duration) Option { return func(c *Config) { c.MaxRetryAfter = d } }

// WithSleep sets [Config.Sleep].
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Config) { c.Sleep = sleep }
}

// WithIdempotencyKeys sets [Config.NewIdempotencyKey].
func WithIdempotencyKeys(newKey func() string) Option {
	return func(c *Config) { c.NewIdempotencyKey = newKey }
}

// Client calls one keelpay server as one store. It is safe for concurrent
// use.
type Client struct {
	cfg  Config
	base *url.URL
	// strict makes the client refuse answers with fields its types do
	// not have (tests only: clients must ignore new fields).
	strict bool
}

// New returns a client of the API at baseURL acting with secretKey (empty
// for a client that only sets stores up), changed by opts.
func New(baseURL, secretKey string, opts ...Option) (*Client, error) {
	cfg := Config{BaseURL: baseURL, SecretKey: secretKey}
	for _, o := range opts {
		o(&cfg)
	}
	return NewWithConfig(cfg)
}

// NewWithConfig returns a client configured by cfg, its zero fields set to
// their defaults.
func NewWithConfig(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("keelpay client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("keelpay client: base URL %q: want http(s)://host", cfg.BaseURL)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "keelpay-go/" + keelpay.Version
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.BackoffInitial <= 0 {
		cfg.BackoffInitial = DefaultBackoffInitial
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = DefaultBackoffMax
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.NewIdempotencyKey == nil {
		cfg.NewIdempotencyKey = newIdempotencyKey
	}
	return &Client{cfg: cfg, base: u}, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "kpgo_" + hex.EncodeToString(b[:])
}

// Response is what the client knows of the HTTP answer an object came in.
type Response struct {
	// StatusCode is the HTTP status of the answer (200, 201, 202).
	StatusCode int
	// RequestID is the answer's Request-Id: quote it when reporting a
	// problem.
	RequestID string
	// IdempotencyKey is the key the call was sent with (POST only).
	IdempotencyKey string
	// IdempotentReplayed is true when the server answered with the stored
	// answer of an earlier request with the same key
	// (Idempotent-Replayed: true).
	IdempotentReplayed bool
	// Attempts is how many tries the call made.
	Attempts int
}

// Error is an error answer of the API: the HTTP status and Request-Id
// around the API's error. errors.As finds the *keelpay.Error inside it
// (code, message, details, Retry-After), and keelpay.ErrorCode(err) gives
// its code.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// RequestID is the answer's Request-Id.
	RequestID string
	// Err is the error the API sent, with RetryAfter from the
	// Retry-After header. An answer that is not the API's JSON error
	// (from a proxy in front of keelpay, say) has an empty Code and the
	// HTTP status text as its message.
	Err *keelpay.Error
	// Attempts is how many tries the call made.
	Attempts int
}

func (e *Error) Error() string {
	msg := e.Err.Message
	if e.Err.Code != "" {
		msg = string(e.Err.Code) + ": " + msg
	}
	if e.RequestID == "" {
		return fmt.Sprintf("keelpay: %d %s", e.StatusCode, msg)
	}
	return fmt.Sprintf("keelpay: %d %s (request %s)", e.StatusCode, msg, e.RequestID)
}

// Unwrap returns the API's error.
func (e *Error) Unwrap() error { return e.Err }

// request is one logical call.
type request struct {
	method string
	path   string
	query  url.Values
	body   any    // nil: no body
	key    string // the caller's Idempotency-Key, POST only
}

// call makes r, with its retries, and decodes the answer into out. It
// returns the answer's metadata.
func (c *Client) call(ctx context.Context, r request, out any) (*Response, error) {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("keelpay client: encode the request: %w", err)
		}
	}
	// r.path has its ids escaped: keep that form, so that an id with a
	// "/" or "%" stays one segment.
	u := *c.base
	u.RawPath = c.base.EscapedPath() + r.path
	var err error
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return nil, fmt.Errorf("keelpay client: path %q: %w", r.path, err)
	}
	if len(r.query) > 0 {
		u.RawQuery = r.query.Encode()
	}
	meta := &Response{}
	if r.method == http.MethodPost {
		// One key for the whole call, kept across its tries: the server
		// does the work once and replays its answer.
		meta.IdempotencyKey = r.key
		if meta.IdempotencyKey == "" {
			meta.IdempotencyKey = c.cfg.NewIdempotencyKey()
		}
	}
	for attempt := 1; ; attempt++ {
		meta.Attempts = attempt
		err := c.try(ctx, r, u.String(), body, meta, out)
		if err == nil {
			return meta, nil
		}
		wait, retry := c.retryAfter(err, attempt)
		if !retry || attempt >= c.cfg.MaxAttempts || ctx.Err() != nil {
			return nil, err
		}
		if serr := c.cfg.Sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("keelpay: %s %s: gave up waiting to retry: %w (last try: %w)", r.method, r.path, serr, err)
		}
	}
}

// netError is a try that got no complete answer.
type netError struct {
	method, path string
	err          error
}

func (e *netError) Error() string {
	return fmt.Sprintf("keelpay: %s %s: %v", e.method, e.path, e.err)
}

func (e *netError) Unwrap() error { return e.err }

// try sends r once.
func (c *Client) try(ctx context.Context, r request, u string, body []byte, meta *Response, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return fmt.Errorf("keelpay client: %w", err)
	}
	h := req.Header
	h.Set("Accept", "application/json")
	h.Set("User-Agent", c.cfg.UserAgent)
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if c.cfg.SecretKey != "" {
		h.Set("Authorization", "Bearer "+c.cfg.SecretKey)
	}
	if meta.IdempotencyKey != "" {
		h.Set("Idempotency-Key", meta.IdempotencyKey)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return &netError{r.method, r.path, err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		// The answer was lost on its way: as good as none.
		return &netError{r.method, r.path, err}
	}
	meta.StatusCode = resp.StatusCode
	meta.RequestID = resp.Header.Get("Request-Id")
	meta.IdempotentReplayed = resp.Header.Get("Idempotent-Replayed") == "true"
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil {
			return nil
		}
		if err := c.decode(data, out); err != nil {
			return fmt.Errorf("keelpay: %s %s: decode the %d answer (request %s): %w", r.method, r.path, resp.StatusCode, meta.RequestID, err)
		}
		return nil
	}
	return &Error{StatusCode: resp.StatusCode, RequestID: meta.RequestID, Err: apiError(resp, data), Attempts: meta.Attempts}
}

func (c *Client) decode(data []byte, out any) error {
	if !c.strict {
		return json.Unmarshal(data, out)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	return d.Decode(out)
}

// apiError reads the error envelope {"error":{code,message,details}}.
func apiError(resp *http.Response, data []byte) *keelpay.Error {
	var env struct {
		Error struct {
			Code    keelpay.Code   `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	e := &keelpay.Error{}
	if json.Unmarshal(data, &env) == nil && env.Error.Code != "" {
		e.Code, e.Message, e.Details = env.Error.Code, env.Error.Message, env.Error.Details
	} else {
		e.Message = http.StatusText(resp.StatusCode)
	}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return e
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date; 0 when
// absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// retryAfter says whether a try that failed with err is repeated, and
// after how long, by the rules of docs/errors.md.
func (c *Client) retryAfter(err error, attempt int) (time.Duration, bool) {
	var ne *netError
	if errors.As(err, &ne) {
		// (A try cut short by the caller's context is not repeated: call
		// checks the context.)
		return c.backoff(attempt), true
	}
	var ae *Error
	if !errors.As(err, &ae) {
		return 0, false // not an answer (decoding...): not repeated
	}
	ra := ae.Err.RetryAfter
	withRetryAfter := func() (time.Duration, bool) {
		if ra <= 0 || ra > c.cfg.MaxRetryAfter {
			return 0, false
		}
		return ra, true
	}
	switch ae.StatusCode {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return withRetryAfter()
	case http.StatusInternalServerError:
		return c.backoff(attempt), true
	case http.StatusConflict:
		switch ae.Err.Code {
		case keelpay.CodeSetupConflict:
			return 0, true
		case keelpay.CodeIdempotencyKeyInUse, keelpay.CodeRefundInProgress:
			return withRetryAfter()
		}
	}
	return 0, false
}

// backoff is the wait after the attempt-th try failed with a 500 or a
// network error.
func (c *Client) backoff(attempt int) time.Duration {
	d := c.cfg.BackoffInitial
	for i := 1; i < attempt && d < c.cfg.BackoffMax; i++ {
		d *= 2
	}
	return min(d, c.cfg.BackoffMax)
}
