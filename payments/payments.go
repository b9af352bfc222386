package payments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/outbox"
	"github.com/keelpay/keelpay/internal/providercall"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// Lifetimes (docs/api.md, "Objects").
const (
	// CardSessionLifetime is how long a card session stays open.
	CardSessionLifetime = 30 * time.Minute
	// IntentLifetime is how long an intent may go unconfirmed before it
	// expires.
	IntentLifetime = 24 * time.Hour
)

// CallTimeoutMax is the largest Config.CallTimeout: a call that starts
// within SendWindow of its attempt is over by ReachWindow, one minute
// after the attempt, when the reconciler first looks the attempt up.
const CallTimeoutMax = 45 * time.Second

// workerBatch is how many intents a worker reads at once.
const workerBatch = 100

// Retries of a change that lost a race for an intent's version.
const (
	// raceRetries is how many times a change made from what the
	// intent was (cancel, a void's record) is read again and tried
	// again after another writer moved the intent on: each retry
	// starts from the newer version, so a few always suffice unless the
	// intent keeps changing under it.
	raceRetries = 5
	// serialisationRetries is how many times an outcome's commit is
	// tried again when the database could not serialise it and the
	// intent is still as it was (the adapter's WithTx already retried
	// inside).
	serialisationRetries = 3
)

// AnswerTimeoutDefault is the default of Config.AnswerTimeout.
const AnswerTimeoutDefault = providercall.AnswerTimeoutDefault

// Config configures a Service. Provider and Storage are required.
type Config struct {
	// AnswerTimeout bounds how long a confirm waits for the provider's
	// answer. Past it the confirm answers processing with last_error
	// outcome_unknown, while the provider call goes on and its run commits
	// the outcome (with the event, and the reconciler as a fallback). Keep
	// it below the WriteTimeout of the http.Server that serves the API,
	// with a margin (providercall.AnswerMargin, 5 s): then a confirm always
	// answers before the server closes its connection. Default
	// AnswerTimeoutDefault (20 s).
	AnswerTimeout time.Duration
	// CallTimeout bounds each call to the provider. Default
	// provider.CallTimeoutDefault; at most CallTimeoutMax.
	CallTimeout time.Duration
	// Clock decides every time the service keeps: expiry, the 3D Secure
	// wait and the reconciler's schedule. Default keelpay.SystemClock.
	Clock keelpay.Clock
	// Committed, when set, is called with each event after the
	// transaction that wrote it has committed: wire it to the
	// dispatcher's Notify so that the webhook leaves at once rather than
	// at the dispatcher's next poll. Default: nothing is called.
	Committed func(ctx context.Context, e *keelpay.Event)
	// Logger gets failures of background work and of provider calls, with
	// object ids only: never personal data or card details. Default
	// slog.Default().
	Logger *slog.Logger
	// Metrics is where the payment metrics are registered. Default: none
	// (not registered).
	Metrics prometheus.Registerer
	// Provider charges cards. New does not register [Service.Notify]
	// with it: whoever assembles the services does, once (service.New
	// does it for a provider.Notifier).
	Provider provider.Provider
	// Storage keeps sessions, cards, intents and their events.
	Storage storage.Storage
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	c.AnswerTimeout = cmp.Or(c.AnswerTimeout, AnswerTimeoutDefault)
	c.CallTimeout = cmp.Or(c.CallTimeout, provider.CallTimeoutDefault)
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports every missing or out-of-range field of c (after
// defaults), each naming its field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.Provider == nil {
		errs = append(errs, errors.New("payments: Config.Provider is required"))
	}
	if c.Storage == nil {
		errs = append(errs, errors.New("payments: Config.Storage is required"))
	}
	if c.CallTimeout < 0 || c.CallTimeout > CallTimeoutMax {
		errs = append(errs, fmt.Errorf("payments: Config.CallTimeout is %v; it must be positive and at most %v, so that a call is over before the reconciler first looks the attempt up", c.CallTimeout, CallTimeoutMax))
	}
	if c.AnswerTimeout < 0 {
		errs = append(errs, fmt.Errorf("payments: Config.AnswerTimeout is %v; it must be positive", c.AnswerTimeout))
	}
	return errors.Join(errs...)
}

// Service runs card sessions, cards and payment intents. It is safe for
// concurrent use, and several Services (in several processes) may share
// one database: every change of an intent is conditional on the version
// it read, so only one of them records an attempt or finishes it.
type Service struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	outbox  *outbox.Outbox
	// detached counts the confirms' provider calls, which may outlive
	// their answers (Config.AnswerTimeout).
	detached providercall.Runs
}

// Drain waits until every provider call of a confirm has ended and its
// outcome is committed, including calls that went on after their confirm
// was answered processing (past Config.AnswerTimeout), or until ctx ends.
// Call it at shutdown, after the HTTP server stopped taking requests and
// before the storage closes; an outcome not committed by then is found by
// the reconciler at the next start.
func (s *Service) Drain(ctx context.Context) error { return s.detached.Wait(ctx) }

// New validates cfg, fills in its defaults and returns a Service. The
// error names every missing or out-of-range field, and says so when
// Metrics already has the payment metrics.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	m, err := newMetrics(cfg.Metrics, cfg.Storage)
	if err != nil {
		return nil, fmt.Errorf("payments: Config.Metrics: %w", err)
	}
	return &Service{cfg: cfg, log: cfg.Logger, metrics: m, outbox: outbox.New(cfg.Storage, cfg.Committed)}, nil
}

// now is the clock's time at the precision storage keeps.
func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC().Truncate(time.Microsecond) }

// call returns the context of one provider call: it outlives the caller's
// cancellation (a charge cut off halfway is an unknown outcome) and is
// bounded by CallTimeout.
func (s *Service) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return providercall.Context(ctx, s.cfg.CallTimeout)
}

// metrics are the service's Prometheus metrics.
type metrics struct {
	attempts   *prometheus.CounterVec
	lateVoided prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, db storage.Storage) (*metrics, error) {
	m := &metrics{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keelpay_payment_attempts_total",
		Help: "Closed payment attempts by outcome (succeeded, failed, voided, canceled, not_sent) and last_error code.",
	}, []string{"outcome", "code"}),
		lateVoided: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "keelpay_payment_late_charges_voided_total",
			Help: "Charges that reached the provider after their attempt was closed as never charged, found by the reconciler and voided.",
		})}
	if reg == nil {
		return m, nil
	}
	return m, errors.Join(reg.Register(m.attempts), reg.Register(m.lateVoided), reg.Register(&intentCollector{db: db}))
}

// intentCollector reports the intents by status and the unknown outcomes
// as storage counts them at scrape time, so that every process reports the
// same figures.
type intentCollector struct {
	db storage.Storage
}

var (
	intentsDesc = prometheus.NewDesc("keelpay_payment_intents",
		"Payment intents by status.", []string{"status"}, nil)
	unknownDesc = prometheus.NewDesc("keelpay_payment_outcomes_unknown",
		"Processing payment intents whose charge outcome is not known yet.", nil, nil)
)

var intentStatuses = []keelpay.PaymentIntentStatus{
	keelpay.IntentRequiresPaymentMethod, keelpay.IntentRequiresAction, keelpay.IntentProcessing,
	keelpay.IntentSucceeded, keelpay.IntentCanceled,
}

func (c *intentCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- intentsDesc
	ch <- unknownDesc
}

func (c *intentCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.db.PaymentIntentCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(intentsDesc, err)
		ch <- prometheus.NewInvalidMetric(unknownDesc, err)
		return
	}
	for _, st := range intentStatuses {
		ch <- prometheus.MustNewConstMetric(intentsDesc, prometheus.GaugeValue, float64(counts.ByStatus[st]), string(st))
	}
	ch <- prometheus.MustNewConstMetric(unknownDesc, prometheus.GaugeValue, float64(counts.OutcomeUnknown))
}
