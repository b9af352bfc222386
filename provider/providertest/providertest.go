// Package providertest is the conformance suite of [provider.Provider]: what
// the keelpay service relies on from any payment provider's adapter. An
// adapter's tests call [Run] with a function that returns a fresh
// [Harness]: the provider under test and the means to drive the outcomes the
// suite needs (a declined card, a 3D Secure challenge and its answer, an
// unknown outcome that resolves later, an outage).
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, func(t *testing.T) *providertest.Harness {
//			sb := sandbox.New(sandbox.Config{Clock: clock})
//			return &providertest.Harness{Provider: sb, ...}
//		})
//	}
//
// Every subtest gets its own harness, so a switch one test turns (an outage)
// does not leak into another. Checks whose hook is not set are skipped, and
// say so.
package providertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// Harness is one provider under test and the hooks that drive it.
type Harness struct {
	// Provider is the adapter under test.
	Provider provider.Provider
	// Credentials are a working application's: CheckApplication accepts
	// them, and the suite charges the merchant it returns.
	Credentials provider.Credentials
	// WrongCredentials are credentials the provider rejects as
	// [provider.KindInvalidCredentials]. Zero skips that check.
	WrongCredentials provider.Credentials
	// Cards are the provider's test cards; see [Cards].
	Cards Cards
	// AnswerChallenge answers the 3D Secure challenge of the charge
	// attemptID, which returned res (status requires_action), as the buyer
	// would: complete passes it, otherwise the buyer fails it. Nil skips
	// the 3D Secure checks.
	AnswerChallenge func(ctx context.Context, attemptID string, res *provider.ChargeResult, complete bool) error
	// ResolveOutcomes makes every outcome that was unknown known, as time
	// passing or the end of an outage would. Nil skips the unknown-outcome
	// checks.
	ResolveOutcomes func(t *testing.T)
	// SetUnavailable switches an outage of the provider on or off: while on,
	// every call does nothing and fails with [provider.KindUnavailable].
	// Nil skips the outage checks.
	SetUnavailable func(on bool)
	// UnavailableRetryAfter is the RetryAfter the provider gives during
	// the outage; 0 when it gives none.
	UnavailableRetryAfter time.Duration
	// Settle lets the provider's eventually consistent reads catch up
	// with its writes: it moves a fake's clock, or waits a little for a
	// real provider. The suite calls it, at most a few times, while a
	// lookup of an attempt it knows was made answers pending, and before
	// it voids. Nil when the provider's reads are current at once.
	Settle func(t *testing.T)
	// ChargeCount, when set, reports how many times money was charged for
	// attemptID, so that the suite can check that repeats charge once.
	ChargeCount func(attemptID string) int
}

// Cards are test card numbers of the provider under test, each with a
// future expiry, charged as new cards. A card left "" skips its checks.
type Cards struct {
	// Succeeds is charged.
	Succeeds string
	// Declined is declined with card_declined and generic_decline.
	Declined string
	// InsufficientFunds is declined with card_declined and
	// insufficient_funds.
	InsufficientFunds string
	// ThreeDSecure asks for a 3D Secure challenge.
	ThreeDSecure string
	// OutcomeUnknown leaves the charge's outcome unknown until
	// [Harness.ResolveOutcomes]; it then resolves as succeeded.
	OutcomeUnknown string
	// BillingRequired fails with billing_required unless the charge has
	// a billing address (country and postal code), then succeeds.
	BillingRequired string
	// Rejected is not accepted by the provider: SaveCard fails with
	// [provider.KindCardRejected], a charge with card_rejected.
	Rejected string
}

// Run runs the whole suite, each check in a subtest of its own named by
// what it checks, against a fresh harness from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) *Harness) {
	t.Helper()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			s := &suite{h: newHarness(t), ctx: t.Context()}
			c.run(t, s)
		})
	}
}

var checks = []struct {
	name string
	run  func(*testing.T, *suite)
}{
	{"CheckApplication/returns_the_same_merchant_and_an_upper_case_currency", testCheckApplication},
	{"CheckApplication/wrong_credentials_are_invalid_credentials", testWrongCredentials},
	{"Charge/succeeds_and_the_lookup_reports_the_same_outcome", testChargeSucceeds},
	{"Charge/a_repeat_returns_the_first_outcome_and_charges_once", testChargeRepeat},
	{"Charge/concurrent_repeats_charge_once", testChargeConcurrent},
	{"Charge/a_saved_card_is_charged_by_its_token", testSavedCard},
	{"Charge/a_decline_keeps_its_decline_code", testDeclines},
	{"Charge/billing_required_without_a_billing_address", testBillingRequired},
	{"Charge/a_rejected_card_is_card_rejected", testRejectedCard},
	{"Charge/without_an_attempt_id_is_an_invalid_request", testInvalidRequest},
	{"ThreeDSecure/completed_succeeds_and_notifies", func(t *testing.T, s *suite) { testThreeDSecure(t, s, true) }},
	{"ThreeDSecure/failed_is_authentication_failed_and_notifies", func(t *testing.T, s *suite) { testThreeDSecure(t, s, false) }},
	{"OutcomeUnknown/is_never_an_unknown_attempt_and_resolves_by_lookup", testOutcomeUnknown},
	{"UnknownAttempt/only_for_an_attempt_never_charged", testUnknownAttempt},
	{"Void/is_idempotent_and_leaves_nothing_charged", testVoid},
	{"Void/of_a_failed_charge_is_not_an_error", testVoidFailed},
	{"Refund/is_idempotent_by_its_attempt_id_and_looked_up", testRefund},
	{"Unavailable/does_nothing_and_gives_the_retry_after", testUnavailable},
}

type suite struct {
	h   *Harness
	ctx context.Context

	once     sync.Once
	merchant string
	currency string
}

// app returns the merchant and currency of the harness's application.
func (s *suite) app(t *testing.T) (merchant, currency string) {
	t.Helper()
	s.once.Do(func() {
		app, err := s.h.Provider.CheckApplication(s.ctx, s.h.Credentials)
		require.NoError(t, err, "CheckApplication with the harness's credentials")
		s.merchant, s.currency = app.MerchantID, app.Currency
	})
	require.NotEmpty(t, s.merchant, "CheckApplication failed earlier")
	return s.merchant, s.currency
}

func (s *suite) needCard(t *testing.T, number, what string) {
	t.Helper()
	if number == "" {
		t.Skipf("the harness has no %s card", what)
	}
}

func (s *suite) card(t *testing.T, number string) *provider.SaveCardRequest {
	merchant, _ := s.app(t)
	return &provider.SaveCardRequest{MerchantID: merchant, Number: number, ExpMonth: 12, ExpYear: time.Now().Year() + 3, CVC: "123", Name: "Jane Roe"}
}

// request is a charge of number as a new card with a fresh attempt id.
func (s *suite) request(t *testing.T, number string) provider.ChargeRequest {
	t.Helper()
	merchant, currency := s.app(t)
	return provider.ChargeRequest{
		MerchantID: merchant,
		AttemptID:  keelpay.NewID("att_"),
		NewCard:    s.card(t, number),
		Amount:     1234,
		Currency:   currency,
	}
}

// charged charges the succeeding card and requires success.
func (s *suite) charged(t *testing.T) (provider.ChargeRequest, *provider.ChargeResult) {
	t.Helper()
	s.needCard(t, s.h.Cards.Succeeds, "succeeding")
	r := s.request(t, s.h.Cards.Succeeds)
	res, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err, "Charge")
	requireSucceeded(t, r, res)
	return r, res
}

func requireSucceeded(t *testing.T, r provider.ChargeRequest, res *provider.ChargeResult) {
	t.Helper()
	require.NotNil(t, res)
	require.Equal(t, provider.ChargeSucceeded, res.Status, "failure: %+v", res.Failure)
	assert.Equal(t, r.Amount, res.Amount, "amount charged")
	assert.Equal(t, r.Currency, res.Currency, "currency charged")
	assert.NotEmpty(t, res.OrderID, "a succeeded charge has the order id a refund needs")
	assert.Nil(t, res.Failure)
	assert.False(t, res.Voided)
}

func requireFailed(t *testing.T, res *provider.ChargeResult, code provider.FailureCode, declineCode string) {
	t.Helper()
	require.NotNil(t, res)
	require.Equal(t, provider.ChargeFailed, res.Status)
	require.NotNil(t, res.Failure)
	assert.Equal(t, code, res.Failure.Code, "failure code (message %q)", res.Failure.Message)
	assert.Equal(t, declineCode, res.Failure.DeclineCode, "decline code")
}

// settleRounds bounds how often the suite calls Settle for one lookup.
const settleRounds = 5

func (s *suite) settle(t *testing.T) {
	if s.h.Settle != nil {
		s.h.Settle(t)
	}
}

// lookup looks the charge of an attempt that reached the provider up and
// requires an answer; a pending answer is asked again after Settle.
func (s *suite) lookup(t *testing.T, attemptID string) *provider.ChargeResult {
	t.Helper()
	merchant, _ := s.app(t)
	for i := 0; ; i++ {
		res, err := s.h.Provider.LookupCharge(s.ctx, merchant, attemptID)
		require.NoError(t, err, "LookupCharge")
		if res.Status != provider.ChargePending || s.h.Settle == nil || i == settleRounds {
			return res
		}
		s.settle(t)
	}
}

// lookupRefund is lookup for a refund send.
func (s *suite) lookupRefund(t *testing.T, attemptID string) *provider.RefundResult {
	t.Helper()
	merchant, _ := s.app(t)
	for i := 0; ; i++ {
		res, err := s.h.Provider.LookupRefund(s.ctx, merchant, attemptID)
		require.NoError(t, err, "LookupRefund")
		if res.Status != provider.RefundPending || s.h.Settle == nil || i == settleRounds {
			return res
		}
		s.settle(t)
	}
}

// notifications registers a recorder with a provider that is a Notifier,
// and returns nil for one that is not.
func (s *suite) notifications() chan [2]string {
	n, ok := s.h.Provider.(provider.Notifier)
	if !ok {
		return nil
	}
	ch := make(chan [2]string, 16)
	n.SetNotifier(func(_ context.Context, merchantID, attemptID string) {
		ch <- [2]string{merchantID, attemptID}
	})
	return ch
}

// awaitNotification waits for the notification of attemptID, failing the
// test if none comes within a generous bound.
func awaitNotification(t *testing.T, ch chan [2]string, merchant, attemptID string) {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case n := <-ch:
			if n == [2]string{merchant, attemptID} {
				return
			}
		case <-timeout.C:
			t.Fatalf("no notification for merchant %s, attempt %s", merchant, attemptID)
		}
	}
}

func testCheckApplication(t *testing.T, s *suite) {
	first, err := s.h.Provider.CheckApplication(s.ctx, s.h.Credentials)
	require.NoError(t, err)
	again, err := s.h.Provider.CheckApplication(s.ctx, s.h.Credentials)
	require.NoError(t, err)
	assert.NotEmpty(t, first.MerchantID)
	assert.Equal(t, first.MerchantID, again.MerchantID, "the same application gives the same merchant")
	assert.Regexp(t, `^[A-Z]{3}$`, first.Currency)
}

func testWrongCredentials(t *testing.T, s *suite) {
	if s.h.WrongCredentials == (provider.Credentials{}) {
		t.Skip("the harness has no wrong credentials")
	}
	_, err := s.h.Provider.CheckApplication(s.ctx, s.h.WrongCredentials)
	require.Error(t, err)
	assert.Equal(t, provider.KindInvalidCredentials, provider.KindOf(err), "error: %v", err)
}

func testChargeSucceeds(t *testing.T, s *suite) {
	r, res := s.charged(t)
	require.NotNil(t, res.Card, "a new card's charge describes the card")
	assert.Equal(t, r.NewCard.Number[len(r.NewCard.Number)-4:], res.Card.Last4)
	assert.Equal(t, r.NewCard.ExpMonth, res.Card.ExpMonth)
	assert.Equal(t, r.NewCard.ExpYear, res.Card.ExpYear)
	assert.NotEmpty(t, res.Card.Token, "a new card is tokenised")

	got := s.lookup(t, r.AttemptID)
	requireSucceeded(t, r, got)
	assert.Equal(t, res.OrderID, got.OrderID)
}

func testChargeRepeat(t *testing.T, s *suite) {
	r, first := s.charged(t)
	again, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	requireSucceeded(t, r, again)
	assert.Equal(t, first.OrderID, again.OrderID, "the repeat returns the first charge")
	if s.h.ChargeCount != nil {
		assert.Equal(t, 1, s.h.ChargeCount(r.AttemptID))
	}

	// A repeat of a refused charge is refused the same way, even with
	// another card: the attempt id decides, not the request.
	if s.h.Cards.Declined != "" {
		d := s.request(t, s.h.Cards.Declined)
		res, err := s.h.Provider.Charge(s.ctx, d)
		require.NoError(t, err)
		requireFailed(t, res, provider.FailureCardDeclined, provider.DeclineGeneric)
		res, err = s.h.Provider.Charge(s.ctx, d)
		require.NoError(t, err)
		requireFailed(t, res, provider.FailureCardDeclined, provider.DeclineGeneric)
	}
}

func testChargeConcurrent(t *testing.T, s *suite) {
	s.needCard(t, s.h.Cards.Succeeds, "succeeding")
	r := s.request(t, s.h.Cards.Succeeds)
	const n = 8
	var wg sync.WaitGroup
	results := make([]*provider.ChargeResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = s.h.Provider.Charge(s.ctx, r) })
	}
	wg.Wait()
	orders := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			// A repeat that meets the first in flight may not know the
			// outcome yet; it must say so, not fail.
			assert.True(t, provider.IsOutcomeUnknown(errs[i]), "call %d: %v", i, errs[i])
			continue
		}
		requireSucceeded(t, r, results[i])
		orders[results[i].OrderID] = true
	}
	assert.LessOrEqual(t, len(orders), 1, "concurrent repeats gave different charges: %v", orders)
	got := s.lookup(t, r.AttemptID)
	requireSucceeded(t, r, got)
	for order := range orders {
		assert.Equal(t, order, got.OrderID)
	}
	if s.h.ChargeCount != nil {
		assert.Equal(t, 1, s.h.ChargeCount(r.AttemptID))
	}
}

func testSavedCard(t *testing.T, s *suite) {
	s.needCard(t, s.h.Cards.Succeeds, "succeeding")
	card := s.card(t, s.h.Cards.Succeeds)
	saved, err := s.h.Provider.SaveCard(s.ctx, *card)
	require.NoError(t, err)
	require.NotEmpty(t, saved.Token)
	assert.Equal(t, card.Number[len(card.Number)-4:], saved.Last4)
	assert.Equal(t, card.ExpMonth, saved.ExpMonth)
	assert.Equal(t, card.ExpYear, saved.ExpYear)
	assert.NotEmpty(t, saved.Brand)

	r := s.request(t, "")
	r.NewCard, r.CardToken = nil, saved.Token
	res, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	requireSucceeded(t, r, res)
	requireSucceeded(t, r, s.lookup(t, r.AttemptID))
}

func testDeclines(t *testing.T, s *suite) {
	for _, c := range []struct{ number, decline string }{
		{s.h.Cards.Declined, provider.DeclineGeneric},
		{s.h.Cards.InsufficientFunds, provider.DeclineInsufficientFunds},
	} {
		t.Run(c.decline, func(t *testing.T) {
			s.needCard(t, c.number, c.decline)
			r := s.request(t, c.number)
			res, err := s.h.Provider.Charge(s.ctx, r)
			require.NoError(t, err, "a decline is a result, not an error")
			requireFailed(t, res, provider.FailureCardDeclined, c.decline)
			requireFailed(t, s.lookup(t, r.AttemptID), provider.FailureCardDeclined, c.decline)
		})
	}
}

func testBillingRequired(t *testing.T, s *suite) {
	s.needCard(t, s.h.Cards.BillingRequired, "billing-required")
	r := s.request(t, s.h.Cards.BillingRequired)
	res, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	requireFailed(t, res, provider.FailureBillingRequired, "")

	r = s.request(t, s.h.Cards.BillingRequired)
	r.Billing = &provider.Billing{Country: "US", State: "CA", PostalCode: "94103"}
	res, err = s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	requireSucceeded(t, r, res)
}

func testRejectedCard(t *testing.T, s *suite) {
	s.needCard(t, s.h.Cards.Rejected, "rejected")
	_, err := s.h.Provider.SaveCard(s.ctx, *s.card(t, s.h.Cards.Rejected))
	require.Error(t, err)
	assert.Equal(t, provider.KindCardRejected, provider.KindOf(err), "error: %v", err)

	r := s.request(t, s.h.Cards.Rejected)
	res, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err, "a rejected new card is a failed charge")
	requireFailed(t, res, provider.FailureCardRejected, "")
}

func testInvalidRequest(t *testing.T, s *suite) {
	s.needCard(t, s.h.Cards.Succeeds, "succeeding")
	r := s.request(t, s.h.Cards.Succeeds)
	r.AttemptID = ""
	_, err := s.h.Provider.Charge(s.ctx, r)
	require.Error(t, err)
	assert.Equal(t, provider.KindInvalidRequest, provider.KindOf(err), "error: %v", err)
	assert.False(t, provider.IsOutcomeUnknown(err))
}

func testThreeDSecure(t *testing.T, s *suite, complete bool) {
	s.needCard(t, s.h.Cards.ThreeDSecure, "3D Secure")
	if s.h.AnswerChallenge == nil {
		t.Skip("the harness cannot answer 3D Secure challenges")
	}
	notes := s.notifications()
	r := s.request(t, s.h.Cards.ThreeDSecure)
	res, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeRequiresAction, res.Status)
	require.NotEmpty(t, res.ActionURL, "the buyer needs the challenge's page")

	open := s.lookup(t, r.AttemptID)
	assert.Equal(t, provider.ChargeRequiresAction, open.Status, "an open challenge looks up as requires_action")
	again, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeRequiresAction, again.Status, "a repeat returns the open challenge")

	require.NoError(t, s.h.AnswerChallenge(s.ctx, r.AttemptID, res, complete))
	merchant, _ := s.app(t)
	if notes != nil {
		awaitNotification(t, notes, merchant, r.AttemptID)
	}
	got := s.lookup(t, r.AttemptID)
	if complete {
		requireSucceeded(t, r, got)
	} else {
		requireFailed(t, got, provider.FailureAuthenticationFailed, "")
	}
}

func testOutcomeUnknown(t *testing.T, s *suite) {
	s.needCard(t, s.h.Cards.OutcomeUnknown, "unknown-outcome")
	if s.h.ResolveOutcomes == nil {
		t.Skip("the harness cannot resolve unknown outcomes")
	}
	merchant, _ := s.app(t)
	r := s.request(t, s.h.Cards.OutcomeUnknown)
	_, err := s.h.Provider.Charge(s.ctx, r)
	require.Error(t, err)
	require.True(t, provider.IsOutcomeUnknown(err), "error: %v", err)
	require.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "an adapter says so with KindOutcomeUnknown: %v", err)

	// Until it resolves, the lookup says pending or fails, but never that
	// the attempt is unknown: it may have been charged.
	res, err := s.h.Provider.LookupCharge(s.ctx, merchant, r.AttemptID)
	require.NotErrorIs(t, err, provider.ErrUnknownAttempt)
	if err == nil {
		assert.Equal(t, provider.ChargePending, res.Status)
	}

	s.h.ResolveOutcomes(t)
	got := s.lookup(t, r.AttemptID)
	requireSucceeded(t, r, got)
	again, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	requireSucceeded(t, r, again)
	assert.Equal(t, got.OrderID, again.OrderID, "the repeat returns the resolved charge")
	if s.h.ChargeCount != nil {
		assert.Equal(t, 1, s.h.ChargeCount(r.AttemptID))
	}
}

func testUnknownAttempt(t *testing.T, s *suite) {
	merchant, _ := s.app(t)
	never := keelpay.NewID("att_")
	_, err := s.h.Provider.LookupCharge(s.ctx, merchant, never)
	assert.ErrorIs(t, err, provider.ErrUnknownAttempt, "LookupCharge")
	assert.False(t, provider.IsOutcomeUnknown(err))
	assert.ErrorIs(t, s.h.Provider.Void(s.ctx, merchant, never), provider.ErrUnknownAttempt, "Void")
	_, err = s.h.Provider.LookupRefund(s.ctx, merchant, keelpay.NewID("rfatt_"))
	assert.ErrorIs(t, err, provider.ErrUnknownAttempt, "LookupRefund")

	// Every attempt that reached the provider is known, whatever its
	// outcome.
	r, _ := s.charged(t)
	_, err = s.h.Provider.LookupCharge(s.ctx, merchant, r.AttemptID)
	assert.NoError(t, err)
	if s.h.Cards.Declined != "" {
		d := s.request(t, s.h.Cards.Declined)
		_, err := s.h.Provider.Charge(s.ctx, d)
		require.NoError(t, err)
		_, err = s.h.Provider.LookupCharge(s.ctx, merchant, d.AttemptID)
		assert.NoError(t, err, "a declined attempt is known")
	}
	// Voiding the unseen attempt recorded nothing: it is still unknown.
	_, err = s.h.Provider.LookupCharge(s.ctx, merchant, never)
	assert.ErrorIs(t, err, provider.ErrUnknownAttempt)
}

func testVoid(t *testing.T, s *suite) {
	r, _ := s.charged(t)
	merchant, _ := s.app(t)
	s.settle(t)
	require.NoError(t, s.h.Provider.Void(s.ctx, merchant, r.AttemptID))
	got := s.lookup(t, r.AttemptID)
	assert.True(t, got.Voided, "the lookup reports the void")
	require.NoError(t, s.h.Provider.Void(s.ctx, merchant, r.AttemptID), "voiding twice is not an error")
	assert.True(t, s.lookup(t, r.AttemptID).Voided)
	again, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	assert.True(t, again.Voided, "a repeat of a voided charge does not charge again")
	if s.h.ChargeCount != nil {
		assert.LessOrEqual(t, s.h.ChargeCount(r.AttemptID), 1)
	}
}

func testVoidFailed(t *testing.T, s *suite) {
	s.needCard(t, s.h.Cards.Declined, "declined")
	merchant, _ := s.app(t)
	r := s.request(t, s.h.Cards.Declined)
	_, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	s.settle(t)
	require.NoError(t, s.h.Provider.Void(s.ctx, merchant, r.AttemptID))
	requireFailed(t, s.lookup(t, r.AttemptID), provider.FailureCardDeclined, provider.DeclineGeneric)
}

func testRefund(t *testing.T, s *suite) {
	r, res := s.charged(t)
	merchant, _ := s.app(t)
	rr := provider.RefundRequest{
		MerchantID:      merchant,
		AttemptID:       keelpay.NewID("rfatt_"),
		ChargeAttemptID: r.AttemptID,
		OrderID:         res.OrderID,
		Amount:          res.Amount,
		Currency:        res.Currency,
	}
	first, err := s.h.Provider.Refund(s.ctx, rr)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, first.Status, "failure: %+v", first.Failure)
	again, err := s.h.Provider.Refund(s.ctx, rr)
	require.NoError(t, err)
	assert.Equal(t, provider.RefundSucceeded, again.Status, "a repeat returns the first outcome")
	got := s.lookupRefund(t, rr.AttemptID)
	assert.Equal(t, provider.RefundSucceeded, got.Status)
	assert.Nil(t, got.Failure)
}

func testUnavailable(t *testing.T, s *suite) {
	if s.h.SetUnavailable == nil {
		t.Skip("the harness cannot make the provider unavailable")
	}
	s.needCard(t, s.h.Cards.Succeeds, "succeeding")
	merchant, _ := s.app(t)
	r := s.request(t, s.h.Cards.Succeeds)
	s.h.SetUnavailable(true)

	check := func(what string, err error) {
		t.Helper()
		require.Error(t, err, what)
		assert.Equal(t, provider.KindUnavailable, provider.KindOf(err), "%s: %v", what, err)
		assert.False(t, provider.IsOutcomeUnknown(err), what)
		var pe *provider.Error
		if errors.As(err, &pe) {
			assert.Equal(t, s.h.UnavailableRetryAfter, pe.RetryAfter, "%s: Retry-After", what)
		}
	}
	_, err := s.h.Provider.CheckApplication(s.ctx, s.h.Credentials)
	check("CheckApplication", err)
	_, err = s.h.Provider.Charge(s.ctx, r)
	check("Charge", err)

	s.h.SetUnavailable(false)
	_, err = s.h.Provider.LookupCharge(s.ctx, merchant, r.AttemptID)
	assert.ErrorIs(t, err, provider.ErrUnknownAttempt, "an unavailable provider charged nothing")
	res, err := s.h.Provider.Charge(s.ctx, r)
	require.NoError(t, err)
	requireSucceeded(t, r, res)
}
