package stores

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/providercall"
	"github.com/keelpay/keelpay/internal/wire"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// Limits of setup. Setups whose credentials were accepted (by the
// provider, or by the stored hash of the store's client secret) count
// against SetupLimitPerClient per client id and SetupLimitTotal in total;
// a setup authenticated by the store's secret key only against the first,
// which no one else can fill. Setups whose credentials are not yet proven
// (a first setup, or a client secret the store does not know) count,
// before the provider is asked, against budgets of their own:
// SetupUnprovenLimitPerClient per client id and
// SetupUnprovenLimitPerAddress per client address. So a flood of bad
// credentials cannot lock an owner out, and credentials still cannot be
// guessed at speed. docs/security.md explains the design.
const (
	SetupLimitPerClient          = 5
	SetupLimitTotal              = 60
	SetupUnprovenLimitPerClient  = 5
	SetupUnprovenLimitPerAddress = 60
	SetupLimitWindow             = time.Minute
)

// Config configures a Service.
type Config struct {
	// AllowInsecureWebhooks accepts http webhook URLs and loopback or
	// private hosts. Default false; the reference server's sandbox mode
	// turns it on.
	AllowInsecureWebhooks bool
	// CallTimeout bounds the provider's check of an application. Default
	// provider.CallTimeoutDefault.
	CallTimeout time.Duration
	// Clock defaults to keelpay.SystemClock.
	Clock keelpay.Clock
	// KeyCacheSize is the most stores remembered by key, for secret keys
	// and for publishable keys each, so that a request with a known key
	// does not read its store again. The cache is kept only when Storage
	// implements storage.StoreWatcher (both of keelpay's adapters do), and
	// any store change empties it: in this process at once, on PostgreSQL
	// in every process as soon as the change is announced. Default
	// KeyCacheSizeDefault; negative: no cache.
	KeyCacheSize int
	// Provider checks application credentials. Required.
	Provider provider.Provider
	// Storage is required.
	Storage storage.Storage
}

// Service sets stores up and authenticates their keys.
type Service struct {
	cfg Config
	// bySecret and byPublishable remember the stores that keys
	// authenticated (nil: no cache); bySecret is keyed by the key's hash.
	bySecret      *keyCache[[sha256.Size]byte]
	byPublishable *keyCache[string]
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	c.CallTimeout = cmp.Or(c.CallTimeout, provider.CallTimeoutDefault)
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	c.KeyCacheSize = cmp.Or(c.KeyCacheSize, KeyCacheSizeDefault)
	return c
}

// Validate reports every missing or out-of-range field of c (after
// defaults), each naming its field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.Provider == nil {
		errs = append(errs, errors.New("stores: Config.Provider is required"))
	}
	if c.Storage == nil {
		errs = append(errs, errors.New("stores: Config.Storage is required"))
	}
	if c.CallTimeout < 0 {
		errs = append(errs, fmt.Errorf("stores: Config.CallTimeout is %v; it must be positive", c.CallTimeout))
	}
	return errors.Join(errs...)
}

// New validates cfg, fills in its defaults and returns a Service. The
// error names every missing or out-of-range field.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	s := &Service{cfg: cfg}
	if w, ok := cfg.Storage.(storage.StoreWatcher); ok && cfg.KeyCacheSize > 0 {
		s.bySecret = newKeyCache(w, cfg.KeyCacheSize, func(sum [sha256.Size]byte) string { return string(sum[:]) })
		s.byPublishable = newKeyCache(w, cfg.KeyCacheSize, func(key string) string { return key })
	}
	return s, nil
}

// SetupParams is the request of a setup.
type SetupParams struct {
	ClientID            string
	ClientSecret        string
	WebhookURL          string
	RotateWebhookSecret bool
	RotateSecretKey     bool
	// StoreID is the store authenticated by its secret key, or "" when
	// the request had none: then setup acts on the store bound to
	// ClientID, creating it the first time.
	StoreID string
	// ClientAddr is the address the request came from (httpapi: the host
	// of RemoteAddr, or what Config.ClientAddr says). Setups whose
	// credentials are not yet proven are limited per address (an IPv6
	// address per /64); "" counts as one address.
	ClientAddr string
	// Idempotency, when set, is the request's idempotency key: a change
	// of the store stores its answer with it (see package idempotency).
	// nil: no key.
	Idempotency *idempotency.Key

	// Form is what keelpay's HTTP API learnt from the request's JSON body
	// (the keys it had, a value of the wrong JSON type), for Validate to
	// judge the fields in the documented order. Its type is internal:
	// code outside keelpay cannot obtain one and leaves it nil, and the
	// fields are then judged as Go values, an empty one being absent.
	Form *wire.Form
}

// Validate checks the fields in the decided order and reports the first
// failure as 400 invalid_request.
func (p *SetupParams) Validate(allowInsecureWebhooks bool) error {
	v := check.In(p.Form)
	v.Required("client_id", func() error { return check.ClientID(p.ClientID) })
	v.Required("client_secret", func() error { return check.AppClientSecret(p.ClientSecret) })
	v.Required("webhook_url", func() error { return check.WebhookURL(p.WebhookURL, allowInsecureWebhooks) })
	v.Required("rotate_webhook_secret", nil)
	v.Required("rotate_secret_key", nil)
	return v.Err()
}

// SetupResult is the outcome of a successful setup.
type SetupResult struct {
	Store *keelpay.Store
	// Created is true for the first setup of the store.
	Created bool
	// SecretKey is set when a secret key was issued (first setup or
	// rotation); it is shown once and kept only as a hash.
	SecretKey string
	// WebhookSecret is set when a webhook secret was issued (first setup,
	// rotation, or a new webhook URL).
	WebhookSecret string
}

// Outcome is what the setup did: created the store (its first setup) or
// changed it.
func (r *SetupResult) Outcome() idempotency.Outcome {
	if r.Created {
		return idempotency.OutcomeCreated
	}
	return idempotency.OutcomeChanged
}

// Setup sets a store up or changes it. See the package documentation.
func (s *Service) Setup(ctx context.Context, p SetupParams) (*SetupResult, error) {
	if err := p.Validate(s.cfg.AllowInsecureWebhooks); err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now().Truncate(time.Microsecond)

	// Read the store (and its version) before asking the provider: a setup
	// that commits in between makes this one lose with setup_conflict.
	var current *keelpay.Store
	var err error
	if p.StoreID != "" {
		current, err = s.cfg.Storage.StoreGetByID(ctx, p.StoreID)
	} else {
		current, err = s.cfg.Storage.StoreGetByClientID(ctx, p.ClientID)
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("setup: read store: %w", err)
	}
	if current == nil && p.StoreID != "" {
		// The key was valid a moment ago; the store cannot disappear.
		return nil, fmt.Errorf("setup: authenticated store %s not found", p.StoreID)
	}

	// Who is asking decides which budget the request takes from. The
	// store's secret key, or the client secret the store was set up with
	// (its salted hash matches), proves the owner before any budget of
	// others applies.
	secretKey := p.StoreID != ""
	knownSecret := current != nil && current.ClientID == p.ClientID &&
		keyring.SecretMatches(current.ClientSecretHash, p.ClientSecret)
	if secretKey || knownSecret {
		if err := s.takeAccepted(ctx, now, p.ClientID, !secretKey); err != nil {
			return nil, err
		}
	} else if err := s.take(ctx, now,
		storage.RateLimit{Key: "setup:unproven:client:" + p.ClientID, Limit: SetupUnprovenLimitPerClient, Window: SetupLimitWindow},
		storage.RateLimit{Key: "setup:unproven:addr:" + addressBucket(p.ClientAddr), Limit: SetupUnprovenLimitPerAddress, Window: SetupLimitWindow},
	); err != nil {
		return nil, err
	}

	// The provider checks the credentials before anything about the store
	// is revealed (store_already_enabled carries the store's id).
	callCtx, cancel := providercall.Context(ctx, s.cfg.CallTimeout)
	app, err := s.cfg.Provider.CheckApplication(callCtx, provider.Credentials{ClientID: p.ClientID, ClientSecret: p.ClientSecret})
	cancel()
	if err != nil {
		return nil, setupProviderError(err)
	}
	if !secretKey && !knownSecret {
		// Accepted by the provider: now it counts as an accepted setup.
		if err := s.takeAccepted(ctx, now, p.ClientID, true); err != nil {
			return nil, err
		}
	}

	if p.StoreID != "" && current.ClientID != p.ClientID {
		bound, err := s.cfg.Storage.StoreGetByClientID(ctx, p.ClientID)
		switch {
		case err == nil && bound.ID != current.ID:
			return nil, keelpay.NewError(keelpay.CodeClientIDInUse,
				"The application is already bound to another store.")
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return nil, fmt.Errorf("setup: read store by client id: %w", err)
		}
	}

	if current == nil {
		return s.create(ctx, p, app, now)
	}
	return s.change(ctx, p, app, current, now)
}

// addressBucket is the budget an address counts against: an IPv4 address
// itself, an IPv6 address its /64 (one host usually has a whole /64, and
// would otherwise get a new budget for every address in it), anything
// else as it is.
func addressBucket(addr string) string {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	return netip.PrefixFrom(ip.WithZone(""), 64).Masked().String()
}

// takeAccepted takes one accepted setup of clientID, and of the total
// unless the request was authenticated by the store's secret key.
func (s *Service) takeAccepted(ctx context.Context, now time.Time, clientID string, total bool) error {
	limits := []storage.RateLimit{{Key: "setup:client:" + clientID, Limit: SetupLimitPerClient, Window: SetupLimitWindow}}
	if total {
		limits = append(limits, storage.RateLimit{Key: "setup:total", Limit: SetupLimitTotal, Window: SetupLimitWindow})
	}
	return s.take(ctx, now, limits...)
}

// take takes a hit of every limit, or returns 429 rate_limited.
func (s *Service) take(ctx context.Context, now time.Time, limits ...storage.RateLimit) error {
	wait, err := s.cfg.Storage.RateLimitTake(ctx, now, limits...)
	if err != nil {
		return fmt.Errorf("setup rate limit: %w", err)
	}
	if wait > 0 {
		return keelpay.NewError(keelpay.CodeRateLimited,
			"Too many setup requests; retry after the time in Retry-After.").WithRetryAfter(wait)
	}
	return nil
}

func (s *Service) create(ctx context.Context, p SetupParams, app *provider.Application, now time.Time) (*SetupResult, error) {
	secretKey := keelpay.NewID(keelpay.PrefixSecretKey)
	st := &keelpay.Store{
		ID:               keelpay.NewID(keelpay.PrefixStore),
		ClientID:         p.ClientID,
		ClientSecretHash: keyring.HashSecret(p.ClientSecret),
		MerchantID:       app.MerchantID,
		Currency:         app.Currency,
		PublishableKey:   keelpay.NewID(keelpay.PrefixPublishableKey),
		SecretKeyHash:    HashSecretKey(secretKey),
		WebhookURL:       p.WebhookURL,
		WebhookSecret:    NewWebhookSecret(),
		Version:          1,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	if err := s.cfg.Storage.StoreInsert(ctx, st); err != nil {
		if errors.Is(err, storage.ErrDuplicate) {
			// Another first setup of the same application won the race.
			return nil, setupConflict()
		}
		return nil, fmt.Errorf("setup: insert store: %w", err)
	}
	return &SetupResult{Store: st, Created: true, SecretKey: secretKey, WebhookSecret: st.WebhookSecret}, nil
}

func (s *Service) change(ctx context.Context, p SetupParams, app *provider.Application, current *keelpay.Store, now time.Time) (*SetupResult, error) {
	next := *current
	next.ClientID = p.ClientID
	if !keyring.SecretMatches(current.ClientSecretHash, p.ClientSecret) {
		next.ClientSecretHash = keyring.HashSecret(p.ClientSecret)
	}
	next.MerchantID, next.Currency = app.MerchantID, app.Currency
	next.WebhookURL = p.WebhookURL
	res := &SetupResult{Store: &next}
	if p.RotateWebhookSecret || p.WebhookURL != current.WebhookURL {
		next.WebhookSecret = NewWebhookSecret()
		res.WebhookSecret = next.WebhookSecret
	}
	if p.RotateSecretKey {
		res.SecretKey = keelpay.NewID(keelpay.PrefixSecretKey)
		next.SecretKeyHash = HashSecretKey(res.SecretKey)
	}
	if sameConfig(&next, current) {
		return nil, keelpay.NewError(keelpay.CodeStoreAlreadyEnabled,
			"The store already has this configuration.").
			WithDetail("store_id", current.ID).
			WithDetail("publishable_key", current.PublishableKey)
	}
	next.UpdatedAt = now
	var b storage.Batch
	b.StoreUpdate(&next, current.Version)
	// A setup with the secret key and an Idempotency-Key stores its
	// answer (sealed, as it carries new secrets) with the change: a retry
	// after a crash gets the secrets this change issued rather than
	// rotating them again.
	if err := p.Idempotency.Finish(&b, next.ID, res.Outcome(), res); err != nil {
		return nil, err
	}
	err := s.cfg.Storage.Commit(ctx, &b)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrDuplicate) {
			return nil, setupConflict()
		}
		return nil, fmt.Errorf("setup: update store: %w", err)
	}
	return res, nil
}

// sameConfig reports whether two store records configure the same thing,
// ignoring bookkeeping and the secret key hash (compared as bytes).
func sameConfig(a, b *keelpay.Store) bool {
	return a.ClientID == b.ClientID && a.ClientSecretHash == b.ClientSecretHash &&
		a.MerchantID == b.MerchantID && a.Currency == b.Currency &&
		a.WebhookURL == b.WebhookURL && a.WebhookSecret == b.WebhookSecret &&
		subtle.ConstantTimeCompare(a.SecretKeyHash, b.SecretKeyHash) == 1
}

func setupConflict() error {
	return keelpay.NewError(keelpay.CodeSetupConflict,
		"Another setup of this store ran at the same time; repeat the request.")
}

// setupProviderError maps the provider's answer to the setup codes in
// docs/errors.md. Errors of unexpected kinds stay internal.
func setupProviderError(err error) error {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return fmt.Errorf("setup: check application: %w", err)
	}
	switch pe.Kind {
	case provider.KindInvalidCredentials:
		return keelpay.NewError(keelpay.CodeInvalidCredentials,
			"The provider rejected the client id or client secret.")
	case provider.KindAppNotFound:
		return keelpay.NewError(keelpay.CodeClientAppNotFound,
			"The provider does not know the application.")
	case provider.KindMissingRoles:
		return keelpay.NewError(keelpay.CodeMissingRoles,
			"The application lacks roles it needs; see details.missing_roles.").
			WithDetail("missing_roles", pe.MissingRoles)
	case provider.KindAccessPending:
		return keelpay.NewError(keelpay.CodePlatformAccessPending,
			"The platform's access to the application is not ready yet.").
			WithRetryAfter(providercall.RetryAfter(err))
	case provider.KindCertificateMismatch:
		return keelpay.NewError(keelpay.CodePlatformCertificateMismatch,
			"Configuration problem on the provider's side; contact the provider.")
	case provider.KindUnavailable, provider.KindOutcomeUnknown:
		// Checking an application changes nothing at the provider, so an
		// unknown outcome is simply "unavailable".
		return keelpay.NewError(keelpay.CodeProviderAPIUnavailable,
			"The provider is unavailable; retry after the time in Retry-After.").
			WithRetryAfter(providercall.RetryAfter(err))
	}
	return fmt.Errorf("setup: check application: %w", err)
}

// HashSecretKey returns the SHA-256 hash under which a secret key is kept.
func HashSecretKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// NewWebhookSecret returns "whsec_" and the standard padded base64 of 32
// random bytes.
func NewWebhookSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return keelpay.PrefixWebhookSecret + base64.StdEncoding.EncodeToString(b[:])
}

// Authenticate returns the store whose secret key this is, or 401
// invalid_api_key. A key that authenticated a moment ago is answered from
// the key cache (see Config.KeyCacheSize) while no store has changed.
func (s *Service) Authenticate(ctx context.Context, secretKey string) (*keelpay.Store, error) {
	if !keelpay.ValidID(keelpay.PrefixSecretKey, secretKey) {
		return nil, ErrInvalidAPIKey()
	}
	sum := sha256.Sum256([]byte(secretKey))
	if st := s.bySecret.cached(sum); st != nil {
		return st, nil
	}
	hash := bytes.Clone(sum[:]) // a miss's own: a hit allocates nothing here
	st, err := s.bySecret.load(ctx, sum, func(ctx context.Context) (*keelpay.Store, error) {
		st, err := s.cfg.Storage.StoreGetBySecretKeyHash(ctx, hash)
		if err == nil && subtle.ConstantTimeCompare(st.SecretKeyHash, hash) != 1 {
			return nil, storage.ErrNotFound
		}
		return st, err
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrInvalidAPIKey()
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return st, nil
}

// AuthenticatePublishable returns the store whose publishable key this is,
// or 401 invalid_api_key. Like Authenticate, it answers a known key from
// the key cache.
func (s *Service) AuthenticatePublishable(ctx context.Context, key string) (*keelpay.Store, error) {
	if !keelpay.ValidID(keelpay.PrefixPublishableKey, key) {
		return nil, ErrInvalidAPIKey()
	}
	if st := s.byPublishable.cached(key); st != nil {
		return st, nil
	}
	st, err := s.byPublishable.load(ctx, key, func(ctx context.Context) (*keelpay.Store, error) {
		return s.cfg.Storage.StoreGetByPublishableKey(ctx, key)
	})
	if errors.Is(err, storage.ErrNotFound) {
		return nil, ErrInvalidAPIKey()
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	return st, nil
}

// ErrInvalidAPIKey returns the 401 invalid_api_key error.
func ErrInvalidAPIKey() error {
	return keelpay.NewError(keelpay.CodeInvalidAPIKey, "The API key is missing or not valid.")
}

// AllowInsecureWebhooks reports whether http and internal webhook URLs are
// accepted.
func (s *Service) AllowInsecureWebhooks() bool { return s.cfg.AllowInsecureWebhooks }
