package sandbox

import (
	"cmp"
	"context"
	"database/sql"
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
	// BaseURL is where [Sandbox.ChallengeHandler] and
	// [Sandbox.ElementHandler] are served; 3D Secure action URLs are
	// BaseURL + "/sandbox/3ds/" + the challenge id, and the element's
	// script is BaseURL + "/sandbox/elements/v1/element.js". Default
	// [BaseURLDefault]. See also [Sandbox.SetBaseURL].
	BaseURL string
	// Clock decides when challenges expire and unknown outcomes resolve.
	// Share the service's clock so that moving it moves the sandbox too.
	// Default [keelpay.SystemClock].
	Clock keelpay.Clock
	// IdleTime is how long the connection to a sandbox file stays open
	// unused: closing it frees its page cache, which SQLite keeps outside
	// the Go heap; the next call opens it again. Default
	// IdleTimeDefault; negative keeps it open. An in-memory sandbox keeps
	// its connection (the database lives in it).
	IdleTime time.Duration
	// Path is the sandbox's own SQLite file, where it keeps saved cards,
	// charges, voids, refunds, 3D Secure challenges and unknown outcomes,
	// so that a sandbox reopened on it after a crash answers every lookup
	// as the crashed one would have. It is created if missing. Default "": a private in-memory
	// database that lives as long as the Sandbox, for tests.
	Path string
}

// WithDefaults returns c with every unset field set to its default.
func (c Config) WithDefaults() Config {
	c.BaseURL = strings.TrimRight(cmp.Or(c.BaseURL, BaseURLDefault), "/")
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	c.IdleTime = cmp.Or(c.IdleTime, IdleTimeDefault)
	return c
}

// IdleTimeDefault is the default of Config.IdleTime.
const IdleTimeDefault = 15 * time.Second

// Sandbox is an in-process payment provider. It implements
// [provider.Provider], [provider.Notifier], [provider.RefundNotifier] and
// [provider.BrowserCapture], and is safe for concurrent use.
type Sandbox struct {
	clock keelpay.Clock

	// mu serialises the sandbox's work: each call reads and changes its
	// database in one transaction under mu.
	mu           sync.Mutex
	db           *sql.DB
	stmts        map[string]*sql.Stmt // prepared once, see prepare
	cards        map[string]*card     // saved cards read before, by token (see savedCard)
	baseURL      string
	notify       provider.NotifyFunc
	refundNotify provider.NotifyFunc
	// later are the refund sends that failed later, for refundNotify;
	// laterCharges the charges whose void failed later, for notify.
	later, laterCharges []attempt
	apps                map[string]AppBehavior // SetApplication, by client id
	unavailable         bool
	accessPending       bool
}

var (
	_ provider.Provider       = (*Sandbox)(nil)
	_ provider.Notifier       = (*Sandbox)(nil)
	_ provider.RefundNotifier = (*Sandbox)(nil)
)

// attempt is an idempotency key: attempt ids are unique per merchant.
type attempt struct{ merchantID, attemptID string }

// Open returns a sandbox that keeps its state in cfg.Path, with everything
// it answered before, or an empty one in memory when cfg.Path is "". Close
// it when done. The configuration switches (SetApplication,
// SetUnavailable, SetAccessPending, SetNotifier, SetBaseURL) are not kept.
func Open(ctx context.Context, cfg Config) (*Sandbox, error) {
	cfg = cfg.WithDefaults()
	db, err := openDB(ctx, cfg.Path, cfg.IdleTime)
	if err != nil {
		return nil, err
	}
	stmts, err := prepare(ctx, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Sandbox{
		clock:   cfg.Clock,
		db:      db,
		stmts:   stmts,
		baseURL: cfg.BaseURL,
		apps:    map[string]AppBehavior{},
		cards:   map[string]*card{},
	}, nil
}

// New is [Open] that panics when the database cannot be opened, which
// does not happen when cfg.Path is "": it returns an empty sandbox in
// memory.
func New(cfg Config) *Sandbox {
	s, err := Open(context.Background(), cfg)
	if err != nil {
		panic("sandbox: " + err.Error())
	}
	return s
}

// Close closes the sandbox's database. Every answer given is already
// committed: closing is not needed to keep them.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.Close()
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
// answered, before the answer returns (outside the sandbox's lock), so that
// a read after the buyer's page answered sees the outcome.
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
// included; an unknown outcome counts once it resolved as succeeded. It is
// 0 if the sandbox's database fails.
func (s *Sandbox) Charges() int {
	return s.Stats().Charges
}

// ChargeCount returns how many charges were made with attemptID (for any
// merchant). Idempotency keeps it at 0 or 1.
func (s *Sandbox) ChargeCount(attemptID string) int {
	return s.countOf(`SELECT COALESCE(SUM(made), 0) FROM sandbox_charges WHERE attempt_id = ?`, attemptID)
}

// RefundCount returns how many times the refund send attemptID paid out
// (for any merchant). Idempotency keeps it at 0 or 1.
func (s *Sandbox) RefundCount(attemptID string) int {
	return s.countOf(`SELECT COALESCE(SUM(paid), 0) FROM sandbox_refunds WHERE attempt_id = ?`, attemptID)
}

// Voids returns how many charges made were voided.
func (s *Sandbox) Voids() int {
	return s.Stats().Voids
}

// Refunds returns how many refunds paid out.
func (s *Sandbox) Refunds() int {
	return s.Stats().Refunds
}

// countOf settles what is due and returns the count query answers, 0 if
// the database fails.
func (s *Sandbox) countOf(query string, args ...any) int {
	defer s.sendLater(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	_ = s.inTx(func(t tx) error {
		if err := s.settleAll(t); err != nil {
			return err
		}
		var err error
		n, err = t.count(query, args...)
		return err
	})
	return n
}

// settleAll brings every attempt that is due up to the clock, so that the
// counts include the unknown outcomes that resolved since.
func (s *Sandbox) settleAll(t tx) error {
	now := s.clock.Now()
	keys, err := t.dueCharges(now)
	if err != nil {
		return err
	}
	for _, k := range keys {
		c, err := t.charge(k)
		if err != nil {
			return err
		}
		if c != nil && s.settleCharge(c, now) {
			if err := t.saveCharge(c); err != nil {
				return err
			}
		}
	}
	if keys, err = t.dueRefunds(now); err != nil {
		return err
	}
	for _, k := range keys {
		rf, err := t.refund(k)
		if err != nil {
			return err
		}
		if rf != nil && s.settleRefund(rf, now) {
			if err := t.saveRefund(rf); err != nil {
				return err
			}
		}
	}
	return nil
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
