package sandbox

import (
	"cmp"
	"strings"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// Defaults and fixed delays of the sandbox.
const (
	// BaseURLDefault is the reference server's default address.
	BaseURLDefault = "http://127.0.0.1:8080"
	// ChallengeTimeout is how long a 3D Secure challenge stays open.
	ChallengeTimeout = 10 * time.Minute
	// ResolveAfter is how long after the attempt an unknown outcome
	// resolves.
	ResolveAfter = 2 * time.Minute
	// AccessPendingRetryAfter is the RetryAfter of [provider.KindAccessPending].
	AccessPendingRetryAfter = 60 * time.Second
	// UnavailableRetryAfter is the RetryAfter of [provider.KindUnavailable].
	UnavailableRetryAfter = 30 * time.Second
)

// Config configures a [Sandbox].
type Config struct {
	// BaseURL is where [Sandbox.ChallengeHandler] is served; 3D Secure
	// action URLs are BaseURL + "/sandbox/3ds/" + the challenge id. Default
	// [BaseURLDefault]. See also [Sandbox.SetBaseURL].
	BaseURL string
	// Clock decides when challenges expire and unknown outcomes resolve.
	// Share the service's clock so that moving it moves the sandbox too.
	// Default [keelpay.SystemClock].
	Clock keelpay.Clock
}

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	c.BaseURL = strings.TrimRight(cmp.Or(c.BaseURL, BaseURLDefault), "/")
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	return c
}

// Sandbox is an in-process payment provider. It implements
// [provider.Provider] and [provider.Notifier] and is safe for concurrent use.
type Sandbox struct {
	clock keelpay.Clock

	mu            sync.Mutex
	baseURL       string
	notify        provider.NotifyFunc
	apps          map[string]AppBehavior // SetApplication, by client id
	unavailable   bool
	accessPending bool
	cards         map[string]*card    // by token
	charges       map[attempt]*charge // by merchant and attempt id
	challenges    map[string]*charge  // by challenge id
	refunds       map[attempt]*refund // by merchant and refund attempt id
	charged       int                 // charges made
	voided        int                 // made charges voided
	refunded      int                 // refunds paid out
}

var (
	_ provider.Provider = (*Sandbox)(nil)
	_ provider.Notifier = (*Sandbox)(nil)
)

// attempt is an idempotency key: attempt ids are unique per merchant.
type attempt struct{ merchantID, attemptID string }

// New returns an empty sandbox.
func New(cfg Config) *Sandbox {
	cfg = cfg.WithDefaults()
	return &Sandbox{
		clock:      cfg.Clock,
		baseURL:    cfg.BaseURL,
		apps:       map[string]AppBehavior{},
		cards:      map[string]*card{},
		charges:    map[attempt]*charge{},
		challenges: map[string]*charge{},
		refunds:    map[attempt]*refund{},
	}
}

// SetBaseURL changes where the 3D Secure page is served, for example once an
// httptest.Server has its address. It applies to every action URL returned
// afterwards, including those of open challenges.
func (s *Sandbox) SetBaseURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.baseURL = strings.TrimRight(u, "/")
}

// SetNotifier registers the function called after a 3D Secure challenge is
// answered. It runs in its own goroutine.
func (s *Sandbox) SetNotifier(f provider.NotifyFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notify = f
}

// SetUnavailable switches the whole provider off or on. While off, every
// call (lookups and CheckApplication included) does nothing and returns
// [provider.KindUnavailable] with a RetryAfter of 30 seconds.
func (s *Sandbox) SetUnavailable(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = on
}

// SetAccessPending makes every call except the lookups do nothing and
// return [provider.KindAccessPending] with a RetryAfter of 60 seconds, as
// when the platform's access to the merchants is not ready.
func (s *Sandbox) SetAccessPending(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accessPending = on
}

// Charges returns how many charges the sandbox has made, voided ones
// included; an unknown outcome counts once it resolved as succeeded.
func (s *Sandbox) Charges() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleAll()
	return s.charged
}

// ChargeCount returns how many charges were made with attemptID (for any
// merchant). Idempotency keeps it at 0 or 1.
func (s *Sandbox) ChargeCount(attemptID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleAll()
	n := 0
	for k, c := range s.charges {
		if k.attemptID == attemptID {
			n += c.made
		}
	}
	return n
}

// Voids returns how many charges made were voided.
func (s *Sandbox) Voids() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleAll()
	return s.voided
}

// Refunds returns how many refunds paid out.
func (s *Sandbox) Refunds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleAll()
	return s.refunded
}

// settleAll brings every attempt up to the clock, so that the counts include
// the unknown outcomes that resolved since.
func (s *Sandbox) settleAll() {
	now := s.clock.Now()
	for _, c := range s.charges {
		s.settleCharge(c, now)
	}
	for _, r := range s.refunds {
		s.settleRefund(r, now)
	}
}

// refuseWork returns the error of a call that acts on the merchant's money
// or cards while the sandbox is switched off or access is pending.
func (s *Sandbox) refuseWork() error {
	if err := s.refuseLookup(); err != nil {
		return err
	}
	if s.accessPending {
		return &provider.Error{Kind: provider.KindAccessPending, Message: "the platform's access to the merchant is pending", RetryAfter: AccessPendingRetryAfter}
	}
	return nil
}

func (s *Sandbox) refuseLookup() error {
	if s.unavailable {
		return &provider.Error{Kind: provider.KindUnavailable, Message: "the provider is unavailable", RetryAfter: UnavailableRetryAfter}
	}
	return nil
}

func invalidRequest(msg string) error {
	return &provider.Error{Kind: provider.KindInvalidRequest, Message: msg}
}

func outcomeUnknown(msg string) error {
	return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: msg}
}
