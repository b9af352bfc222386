package sandbox_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// volatile are the fields of a charge result that are random.
var volatile = cmp.Options{
	cmpopts.IgnoreFields(provider.ChargeResult{}, "AuthorizationCode", "OrderID", "ActionURL"),
	cmpopts.IgnoreFields(provider.SavedCard{}, "Token"),
	cmpopts.IgnoreFields(provider.Failure{}, "Message"),
}

func TestChargeCards(t *testing.T) {
	t.Parallel()
	failed := func(code provider.FailureCode, decline string) provider.ChargeResult {
		return provider.ChargeResult{Status: provider.ChargeFailed, Amount: 1234, Currency: "EUR", Failure: &provider.Failure{Code: code, DeclineCode: decline}}
	}
	succeeded := provider.ChargeResult{Status: provider.ChargeSucceeded, Amount: 1234, Currency: "EUR"}
	tests := []struct {
		number  string
		billing *provider.Billing
		// want is the outcome with a new card and, unless wantSaved is set,
		// with the saved card.
		want      provider.ChargeResult
		wantSaved *provider.ChargeResult
		wantKind  provider.ErrorKind
		noOrder   bool
	}{
		{number: sandbox.CardVisa, want: succeeded},
		{number: sandbox.CardMastercard, want: succeeded},
		{number: "4111111111111111", want: succeeded},
		{number: sandbox.CardThreeDSecure, want: provider.ChargeResult{Status: provider.ChargeRequiresAction, Amount: 1234, Currency: "EUR"}},
		{number: sandbox.CardDeclined, want: failed(provider.FailureCardDeclined, provider.DeclineGeneric)},
		{number: sandbox.CardInsufficientFunds, want: failed(provider.FailureCardDeclined, provider.DeclineInsufficientFunds)},
		{number: sandbox.CardRejected, want: failed(provider.FailureCardRejected, "")},
		{number: sandbox.CardBillingRequired, want: failed(provider.FailureBillingRequired, "")},
		{number: sandbox.CardBillingRequired, billing: &provider.Billing{State: "CA"}, want: failed(provider.FailureBillingRequired, "")},
		{number: sandbox.CardBillingRequired, billing: &provider.Billing{Country: "DE"}, want: succeeded},
		{number: sandbox.CardProviderError, want: failed(provider.FailureProviderError, "")},
		{number: sandbox.CardOutcomeUnknown, wantKind: provider.KindOutcomeUnknown},
		{number: sandbox.CardOutcomeUnknownDeclined, wantKind: provider.KindOutcomeUnknown},
		{number: sandbox.CardUnavailable, want: succeeded, wantSaved: ptr(failed(provider.FailureCardUnavailable, ""))},
		{number: sandbox.CardCurrencyMismatch, want: provider.ChargeResult{Status: provider.ChargeSucceeded, Amount: 1234, Currency: "USD"}},
		{number: sandbox.CardAmountMismatch, want: provider.ChargeResult{Status: provider.ChargeSucceeded, Amount: 1235, Currency: "EUR"}},
		{number: sandbox.CardNoOrderID, want: succeeded, noOrder: true},
		{number: sandbox.CardRefundRejected, want: succeeded},
		{number: sandbox.CardRefundOrderNotFound, want: succeeded},
		{number: sandbox.CardRefundOutcomeUnknown, want: succeeded},
		{number: sandbox.CardRefundProviderError, want: succeeded},
	}
	for _, tt := range tests {
		for _, saved := range []bool{false, true} {
			if saved && tt.number == sandbox.CardRejected {
				continue // SaveCard refuses it: TestSaveCard
			}
			name := tt.number + map[bool]string{false: "/new", true: "/saved"}[saved]
			if tt.billing != nil {
				name += "/billing"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				b := setup(t)
				req := provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_1", Amount: 1234, Currency: "EUR", Billing: tt.billing}
				card := newCard(tt.number)
				if saved {
					s, err := b.sb.SaveCard(b.ctx, *card)
					require.NoError(t, err)
					req.CardToken = s.Token
				} else {
					req.NewCard = card
				}
				got, err := b.sb.Charge(b.ctx, req)
				if tt.wantKind != "" {
					requireKind(t, tt.wantKind, err)
					require.Nil(t, got)
					require.Zero(t, b.sb.Charges())
					return
				}
				require.NoError(t, err)

				want := tt.want
				if saved && tt.wantSaved != nil {
					want = *tt.wantSaved
				}
				if want.Failure == nil || want.Failure.Code != provider.FailureCardRejected {
					last4 := tt.number[len(tt.number)-4:]
					brand := map[byte]string{'4': provider.BrandVisa, '5': provider.BrandMastercard}[tt.number[0]]
					want.Card = &provider.SavedCard{Brand: brand, Last4: last4, ExpMonth: 12, ExpYear: 2030}
				}
				requireDiff(t, &want, got, volatile)
				charges := 0
				if want.Status == provider.ChargeSucceeded {
					charges = 1
				}

				switch got.Status {
				case provider.ChargeSucceeded:
					require.Len(t, got.AuthorizationCode, 6)
					require.Equal(t, tt.noOrder, got.OrderID == "", "order id %q", got.OrderID)
				case provider.ChargeRequiresAction:
					require.True(t, strings.HasPrefix(got.ActionURL, "https://sandbox.test/sandbox/3ds/3ds_"), got.ActionURL)
				case provider.ChargeFailed:
					require.NotEmpty(t, got.Failure.Message)
					require.Empty(t, got.AuthorizationCode)
					require.Empty(t, got.OrderID)
				}
				require.Equal(t, charges, b.sb.Charges())
				require.Equal(t, charges, b.sb.ChargeCount("att_1"))

				// The lookup and a repeated charge give the same outcome.
				looked, err := b.sb.LookupCharge(b.ctx, merchant, "att_1")
				require.NoError(t, err)
				requireDiff(t, got, looked)
				again, err := b.sb.Charge(b.ctx, req)
				require.NoError(t, err)
				requireDiff(t, got, again)
				require.Equal(t, charges, b.sb.Charges())
			})
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestCurrencyMismatchChargesEURForOtherCurrencies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, err := b.sb.Charge(b.ctx, provider.ChargeRequest{
		MerchantID: merchant, AttemptID: "att_1", NewCard: newCard(sandbox.CardCurrencyMismatch), Amount: 500, Currency: "USD",
	})
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, got.Status)
	require.Equal(t, "EUR", got.Currency)
	require.Equal(t, int64(500), got.Amount)
}

func TestTestCardsPassLuhn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, n := range []string{
		sandbox.CardVisa, sandbox.CardMastercard, sandbox.CardThreeDSecure, sandbox.CardDeclined,
		sandbox.CardInsufficientFunds, sandbox.CardBillingRequired, sandbox.CardProviderError,
		sandbox.CardOutcomeUnknown, sandbox.CardOutcomeUnknownDeclined, sandbox.CardUnavailable,
		sandbox.CardCurrencyMismatch, sandbox.CardAmountMismatch, sandbox.CardNoOrderID,
		sandbox.CardRefundRejected, sandbox.CardRefundOrderNotFound, sandbox.CardRefundOutcomeUnknown,
		sandbox.CardRefundProviderError,
	} {
		_, err := b.sb.SaveCard(b.ctx, *newCard(n))
		require.NoError(t, err, n)
	}
}

func TestSaveCard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		number    string
		month     int
		year      int
		wantBrand string
	}{
		{"visa", sandbox.CardVisa, 12, 2030, provider.BrandVisa},
		{"mastercard", sandbox.CardMastercard, 12, 2030, provider.BrandMastercard},
		{"mastercard 2-series", "2223003122003222", 12, 2030, provider.BrandMastercard},
		{"amex", "378282246310005", 12, 2030, provider.BrandAmex},
		{"discover", "6011111111111117", 12, 2030, provider.BrandDiscover},
		{"diners", "3056930009020004", 12, 2030, provider.BrandUnknown},
		{"this month", sandbox.CardVisa, 11, 2026, provider.BrandVisa},
		{"unavailable saves fine", sandbox.CardUnavailable, 12, 2030, provider.BrandVisa},
		{"rejected", sandbox.CardRejected, 12, 2030, ""},
		{"bad check digit", "4242424242424241", 12, 2030, ""},
		{"not digits", "4242-4242-4242-4242", 12, 2030, ""},
		{"too short", "42424", 12, 2030, ""},
		{"last month", sandbox.CardVisa, 10, 2026, ""},
		{"two-digit year", sandbox.CardVisa, 12, 30, ""},
		{"month 13", sandbox.CardVisa, 13, 2030, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			req := *newCard(tt.number)
			req.ExpMonth, req.ExpYear = tt.month, tt.year
			got, err := b.sb.SaveCard(b.ctx, req)
			if tt.wantBrand == "" {
				e := requireKind(t, provider.KindCardRejected, err)
				require.NotEmpty(t, e.Message)
				return
			}
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(got.Token, "tok_"), got.Token)
			requireDiff(t, &provider.SavedCard{Brand: tt.wantBrand, Last4: tt.number[len(tt.number)-4:], ExpMonth: tt.month, ExpYear: tt.year}, got, volatile)
		})
	}

	t.Run("no merchant", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		req := *newCard(sandbox.CardVisa)
		req.MerchantID = ""
		_, err := b.sb.SaveCard(b.ctx, req)
		requireKind(t, provider.KindInvalidRequest, err)
	})
}

func TestChargeRefusesBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := b.sb.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: "merch_other", Number: sandbox.CardVisa, ExpMonth: 1, ExpYear: 2031})
	require.NoError(t, err)

	tests := []struct {
		name string
		req  provider.ChargeRequest
	}{
		{"token of another merchant", provider.ChargeRequest{CardToken: other.Token, Amount: 100, Currency: "EUR"}},
		{"unknown token", provider.ChargeRequest{CardToken: "tok_nope", Amount: 100, Currency: "EUR"}},
		{"token and new card", provider.ChargeRequest{CardToken: other.Token, NewCard: newCard(sandbox.CardVisa), Amount: 100, Currency: "EUR"}},
		{"no card", provider.ChargeRequest{Amount: 100, Currency: "EUR"}},
		{"zero amount", provider.ChargeRequest{NewCard: newCard(sandbox.CardVisa), Currency: "EUR"}},
		{"lower-case currency", provider.ChargeRequest{NewCard: newCard(sandbox.CardVisa), Amount: 100, Currency: "eur"}},
	}
	for i, tt := range tests {
		tt.req.MerchantID, tt.req.AttemptID = merchant, "att_"+strconv.Itoa(i)
		got, err := b.sb.Charge(b.ctx, tt.req)
		require.NoError(t, err, tt.name)
		require.Equal(t, provider.ChargeFailed, got.Status, tt.name)
		require.Equal(t, provider.FailureInvalidRequest, got.Failure.Code, tt.name)
	}
	require.Zero(t, b.sb.Charges())

	_, err = b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: merchant, NewCard: newCard(sandbox.CardVisa), Amount: 100, Currency: "EUR"})
	requireKind(t, provider.KindInvalidRequest, err)
	_, err = b.sb.Charge(b.ctx, provider.ChargeRequest{AttemptID: "att_x", NewCard: newCard(sandbox.CardVisa), Amount: 100, Currency: "EUR"})
	requireKind(t, provider.KindInvalidRequest, err)
}

func TestChargeIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20
	results := make([]*provider.ChargeResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := b.chargeNew(t, "att_same", sandbox.CardVisa)
			if err == nil {
				results[i] = res
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NotNil(t, results[i])
		requireDiff(t, results[0], results[i])
	}
	require.Equal(t, 1, b.sb.Charges())
	require.Equal(t, 1, b.sb.ChargeCount("att_same"))

	// Another attempt charges again; another merchant's attempt with the
	// same id is its own attempt.
	b.succeeded(t, "att_other", sandbox.CardVisa)
	_, err := b.sb.Charge(b.ctx, provider.ChargeRequest{
		MerchantID: "merch_other", AttemptID: "att_same", NewCard: newCard(sandbox.CardVisa), Amount: 1, Currency: "EUR",
	})
	require.NoError(t, err)
	require.Equal(t, 3, b.sb.Charges())
	require.Equal(t, 2, b.sb.ChargeCount("att_same"))
}

func TestFailedChargeIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := b.chargeNew(t, "att_1", sandbox.CardDeclined)
	require.NoError(t, err)
	// A repeated attempt id returns the first outcome even with another card.
	again, err := b.chargeNew(t, "att_1", sandbox.CardVisa)
	require.NoError(t, err)
	requireDiff(t, first, again)
	require.Zero(t, b.sb.Charges())
}

func TestUnknownOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		number  string
		want    provider.ChargeStatus
		failure *provider.Failure
		charges int
	}{
		{sandbox.CardOutcomeUnknown, provider.ChargeSucceeded, nil, 1},
		{sandbox.CardOutcomeUnknownDeclined, provider.ChargeFailed, &provider.Failure{Code: provider.FailureCardDeclined, DeclineCode: provider.DeclineGeneric}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.number, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, err := b.chargeNew(t, "att_1", tt.number)
			requireKind(t, provider.KindOutcomeUnknown, err)
			require.True(t, provider.IsOutcomeUnknown(err))

			b.clock.Advance(sandbox.ResolveAfter - 1)
			got, err := b.sb.LookupCharge(b.ctx, merchant, "att_1")
			require.NoError(t, err)
			require.Equal(t, provider.ChargePending, got.Status)
			_, err = b.chargeNew(t, "att_1", tt.number)
			requireKind(t, provider.KindOutcomeUnknown, err)
			require.Zero(t, b.sb.Charges())

			b.clock.Advance(1)
			got, err = b.sb.LookupCharge(b.ctx, merchant, "att_1")
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Status)
			requireDiff(t, tt.failure, got.Failure, volatile)
			require.Equal(t, tt.number[12:], got.Card.Last4)
			require.Equal(t, tt.charges, b.sb.Charges())

			again, err := b.chargeNew(t, "att_1", tt.number)
			require.NoError(t, err)
			requireDiff(t, got, again)
			require.Equal(t, tt.charges, b.sb.ChargeCount("att_1"))
		})
	}
}

func TestLookupUnknownAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.succeeded(t, "att_1", sandbox.CardVisa)
	_, err := b.sb.LookupCharge(b.ctx, merchant, "att_2")
	require.ErrorIs(t, err, provider.ErrUnknownAttempt)
	require.False(t, provider.IsOutcomeUnknown(err))
	_, err = b.sb.LookupCharge(b.ctx, "merch_other", "att_1")
	require.ErrorIs(t, err, provider.ErrUnknownAttempt)
}

func TestVoid(t *testing.T) {
	t.Parallel()

	t.Run("succeeded", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res := b.succeeded(t, "att_1", sandbox.CardCurrencyMismatch)
		require.NoError(t, b.sb.Void(b.ctx, merchant, "att_1"))
		require.NoError(t, b.sb.Void(b.ctx, merchant, "att_1"))
		got, err := b.sb.LookupCharge(b.ctx, merchant, "att_1")
		require.NoError(t, err)
		res.Voided = true
		requireDiff(t, res, got)
		require.Equal(t, 1, b.sb.Charges())
		require.Equal(t, 1, b.sb.Voids())
	})

	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res, err := b.chargeNew(t, "att_1", sandbox.CardDeclined)
		require.NoError(t, err)
		require.NoError(t, b.sb.Void(b.ctx, merchant, "att_1"))
		got, err := b.sb.LookupCharge(b.ctx, merchant, "att_1")
		require.NoError(t, err)
		requireDiff(t, res, got)
		require.Zero(t, b.sb.Voids())
	})

	t.Run("pending outcome", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.chargeNew(t, "att_1", sandbox.CardOutcomeUnknown)
		requireKind(t, provider.KindOutcomeUnknown, err)
		require.NoError(t, b.sb.Void(b.ctx, merchant, "att_1"))
		require.Zero(t, b.sb.Voids())
		b.clock.Advance(sandbox.ResolveAfter)
		got, err := b.sb.LookupCharge(b.ctx, merchant, "att_1")
		require.NoError(t, err)
		require.Equal(t, provider.ChargeSucceeded, got.Status)
		require.True(t, got.Voided)
		require.Equal(t, 1, b.sb.Charges())
		require.Equal(t, 1, b.sb.Voids())
	})

	t.Run("unknown attempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.ErrorIs(t, b.sb.Void(b.ctx, merchant, "att_1"), provider.ErrUnknownAttempt)
	})
}

func TestSwitches(t *testing.T) {
	t.Parallel()
	creds := provider.Credentials{ClientID: "app_shop1", ClientSecret: "secret_shop1"}
	refund := func(b *bundle, attemptID string) error {
		_, err := b.sb.Refund(b.ctx, provider.RefundRequest{MerchantID: merchant, AttemptID: attemptID, ChargeAttemptID: "att_done", OrderID: "x", Amount: 1234, Currency: "EUR"})
		return err
	}
	calls := []struct {
		name   string
		lookup bool
		call   func(t *testing.T, b *bundle) error
	}{
		{"CheckApplication", false, func(t *testing.T, b *bundle) error { _, err := b.sb.CheckApplication(b.ctx, creds); return err }},
		{"SaveCard", false, func(t *testing.T, b *bundle) error {
			_, err := b.sb.SaveCard(b.ctx, *newCard(sandbox.CardVisa))
			return err
		}},
		{"Charge", false, func(t *testing.T, b *bundle) error { _, err := b.chargeNew(t, "att_new", sandbox.CardVisa); return err }},
		{"Void", false, func(t *testing.T, b *bundle) error { return b.sb.Void(b.ctx, merchant, "att_done") }},
		{"Refund", false, func(t *testing.T, b *bundle) error { return refund(b, "ref_new") }},
		{"LookupCharge", true, func(t *testing.T, b *bundle) error {
			_, err := b.sb.LookupCharge(b.ctx, merchant, "att_done")
			return err
		}},
		{"LookupRefund", true, func(t *testing.T, b *bundle) error {
			_, err := b.sb.LookupRefund(b.ctx, merchant, "ref_done")
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.succeeded(t, "att_done", sandbox.CardVisa)
			require.NoError(t, refund(b, "ref_done"))

			b.sb.SetUnavailable(true)
			e := requireKind(t, provider.KindUnavailable, c.call(t, b))
			require.Equal(t, sandbox.UnavailableRetryAfter, e.RetryAfter)
			require.False(t, provider.IsOutcomeUnknown(e))
			b.sb.SetAccessPending(true) // unavailable wins
			requireKind(t, provider.KindUnavailable, c.call(t, b))
			b.sb.SetUnavailable(false)

			if c.lookup {
				require.NoError(t, c.call(t, b))
			} else {
				e = requireKind(t, provider.KindAccessPending, c.call(t, b))
				require.Equal(t, sandbox.AccessPendingRetryAfter, e.RetryAfter)
			}
			b.sb.SetAccessPending(false)
			require.NoError(t, c.call(t, b))

			// Nothing was done while refused.
			require.Equal(t, map[bool]int{false: 1, true: 2}[c.name == "Charge"], b.sb.Charges())
			_, err := b.sb.LookupCharge(b.ctx, merchant, "att_new")
			require.Equal(t, c.name == "Charge", err == nil, "lookup: %v", err)
		})
	}
}

// A saved card charged once is still refused to another merchant, and
// its behaviour holds at every charge.
func TestSavedCardChargedAgainKeepsItsMerchantAndBehaviour(t *testing.T) {
	t.Parallel()
	b := setup(t)
	declined, err := b.sb.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: merchant, Number: sandbox.CardDeclined, ExpMonth: 1, ExpYear: 2031})
	require.NoError(t, err)
	for i := range 3 {
		got, err := b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_own_" + strconv.Itoa(i),
			CardToken: declined.Token, Amount: 100, Currency: "EUR"})
		require.NoError(t, err)
		require.Equal(t, provider.ChargeFailed, got.Status)
		require.Equal(t, provider.FailureCardDeclined, got.Failure.Code)
		require.Equal(t, declined.Last4, got.Card.Last4)
	}
	got, err := b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: "merch_other", AttemptID: "att_other",
		CardToken: declined.Token, Amount: 100, Currency: "EUR"})
	require.NoError(t, err)
	require.Equal(t, provider.ChargeFailed, got.Status)
	require.Equal(t, provider.FailureInvalidRequest, got.Failure.Code)
	require.Zero(t, b.sb.Charges())
}

// TestVoidsThatDoNotHold: Void returns nil only once the void holds.
func TestVoidsThatDoNotHold(t *testing.T) {
	t.Parallel()
	t.Run("pending", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		res := b.succeeded(t, "att_1", sandbox.CardAmountMismatchVoidPending)
		require.EqualValues(t, 1235, res.Amount, "one minor unit more than asked")
		requireKind(t, provider.KindOutcomeUnknown, b.sb.Void(b.ctx, merchant, "att_1"))
		b.clock.Advance(sandbox.ResolveAfter - time.Second)
		requireKind(t, provider.KindOutcomeUnknown, b.sb.Void(b.ctx, merchant, "att_1"))
		looked, err := b.sb.LookupCharge(b.ctx, merchant, "att_1")
		require.NoError(t, err)
		require.False(t, looked.Voided, "pending: the money is still charged")
		require.Zero(t, b.sb.Voids())
		b.clock.Advance(time.Second)
		require.NoError(t, b.sb.Void(b.ctx, merchant, "att_1"))
		looked, err = b.sb.LookupCharge(b.ctx, merchant, "att_1")
		require.NoError(t, err)
		require.True(t, looked.Voided)
		require.Equal(t, 1, b.sb.Voids())
	})
	t.Run("fails later", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		var notified []string
		b.sb.SetNotifier(func(_ context.Context, _, attemptID string) { notified = append(notified, attemptID) })
		b.succeeded(t, "att_1", sandbox.CardAmountMismatchVoidFailsLater)
		require.NoError(t, b.sb.Void(b.ctx, merchant, "att_1"))
		require.Equal(t, 1, b.sb.Voids())
		b.clock.Advance(sandbox.ResolveAfter)
		require.NoError(t, b.sb.Settle(b.ctx))
		require.Equal(t, []string{"att_1"}, notified)
		looked, err := b.sb.LookupCharge(b.ctx, merchant, "att_1")
		require.NoError(t, err)
		require.Equal(t, provider.ChargeSucceeded, looked.Status)
		require.False(t, looked.Voided, "the void failed: the money is charged again")
		require.Zero(t, b.sb.Voids())
		require.NoError(t, b.sb.Void(b.ctx, merchant, "att_1"), "a void made again holds")
		b.clock.Advance(time.Hour)
		require.NoError(t, b.sb.Settle(b.ctx))
		require.Equal(t, 1, b.sb.Voids())
		require.Len(t, notified, 1)
	})
}

// A detached card can no longer be charged (card_unavailable), while its
// earlier charge stays known; detaching is idempotent, another merchant
// cannot detach it, and an unavailable sandbox detaches nothing.
func TestDetachedCardIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var _ provider.CardDetacher = b.sb
	saved, err := b.sb.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: merchant, Number: sandbox.CardVisa, ExpMonth: 1, ExpYear: 2031})
	require.NoError(t, err)
	charge := func(attempt string) *provider.ChargeResult {
		t.Helper()
		got, err := b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: attempt,
			CardToken: saved.Token, Amount: 100, Currency: "EUR"})
		require.NoError(t, err)
		return got
	}
	require.Equal(t, provider.ChargeSucceeded, charge("att_before").Status)

	b.sb.SetUnavailable(true)
	err = b.sb.DetachCard(b.ctx, merchant, saved.Token)
	require.Equal(t, provider.KindUnavailable, provider.KindOf(err))
	b.sb.SetUnavailable(false)
	require.Equal(t, provider.ChargeSucceeded, charge("att_still").Status, "a refused detach changed nothing")

	require.NoError(t, b.sb.DetachCard(b.ctx, "merch_other", saved.Token))
	require.Equal(t, provider.ChargeSucceeded, charge("att_other_merchant").Status, "another merchant detached nothing")

	require.NoError(t, b.sb.DetachCard(b.ctx, merchant, saved.Token))
	got := charge("att_after")
	require.Equal(t, provider.ChargeFailed, got.Status)
	require.Equal(t, provider.FailureCardUnavailable, got.Failure.Code)
	require.NoError(t, b.sb.DetachCard(b.ctx, merchant, saved.Token), "detached already")
	require.NoError(t, b.sb.DetachCard(b.ctx, merchant, "tok_unknown"), "an unknown token")
	before, err := b.sb.LookupCharge(b.ctx, merchant, "att_before")
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, before.Status)
}
