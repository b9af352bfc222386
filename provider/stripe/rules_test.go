package stripe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/stripe"
)

// Tests of Stripe's documented rules the adapter relies on; docs/providers.md
// lists each with its Stripe page.

// Row 1: docs.stripe.com/metadata — keys of at most 40 characters.
func TestMetadataKeysWithinStripesLimits(t *testing.T) {
	for _, id := range []string{keelpay.NewID("rfatt_"), keelpay.NewID("att_"), strings.Repeat("x", 255), ""} {
		for _, k := range stripe.MetadataKeys(id) {
			assert.LessOrEqual(t, len(k), 40, "metadata key %q", k)
			assert.NotContains(t, k, "[")
			assert.NotContains(t, k, "]")
		}
	}
	assert.NotEqual(t, stripe.RefundMarkKey("rfatt_a"), stripe.RefundMarkKey("rfatt_b"))
}

func TestRefundMarkerFitsStripesMetadataLimits(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := charge(fakeCardSucceeds)
	res, err := e.p.Charge(ctx, c)
	require.NoError(t, err)
	rr := provider.RefundRequest{MerchantID: testAccount, AttemptID: keelpay.NewID("rfatt_"), ChargeAttemptID: c.AttemptID,
		OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency}
	out, err := e.p.Refund(ctx, rr)
	require.NoError(t, err, "Stripe refuses metadata keys over 40 characters")
	assert.Equal(t, provider.RefundSucceeded, out.Status)
	// After a restart, the marker is how the refund is found.
	e.fake.advance(searchLag)
	got, err := e.restart(t).LookupRefund(ctx, testAccount, rr.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.RefundSucceeded, got.Status)
}

func TestFakeRefusesMetadataOverStripesLimits(t *testing.T) {
	f := newFakeStripe(t)
	f.addAccount(testKey, &fakeAccount{id: testAccount, currency: "eur", chargesEnabled: true})
	form := strings.NewReader("metadata[" + strings.Repeat("k", 41) + "]=1")
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/v1/payment_intents/pi_x", form)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
}

// Row 2: docs.stripe.com/search — search lags and is not for
// read-after-write; docs.stripe.com/rate-limits — 20 searches a second.
func TestChargeMakesNoSearch(t *testing.T) {
	e := newEnv(t)
	for _, number := range []string{fakeCardSucceeds, fakeCardDeclined, fakeCard3DS} {
		_, err := e.p.Charge(t.Context(), charge(number))
		require.NoError(t, err)
	}
	assert.Zero(t, e.fake.searchCount(), "a charge makes no search")
}

func TestChargeWhileSearchIsUnavailable(t *testing.T) {
	e := newEnv(t)
	e.fake.set(func(f *fakeStripe) { f.searchOff = true })
	r := charge(fakeCardSucceeds)
	res, err := e.p.Charge(t.Context(), r)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, res.Status)
	// The hint answers look-ups and voids without the search.
	got, err := e.p.LookupCharge(t.Context(), testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, got.Status)
	require.NoError(t, e.p.Void(t.Context(), testAccount, r.AttemptID))
	assert.Zero(t, e.fake.searchCount())
}

// Row 3: a PaymentIntent read by id is current, whatever the search shows.
func TestThreeDSReturnSucceedsAtOnceWhileSearchLags(t *testing.T) {
	e := newEnv(t)
	e.fake.set(func(f *fakeStripe) { f.searchLag = 30 * time.Minute })
	ctx := t.Context()
	r := charge(fakeCard3DS)
	res, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeRequiresAction, res.Status)

	// The process restarted while the buyer was at 3D Secure: no hint of
	// Charge's is left. The buyer passes and comes back at once.
	p := e.restart(t)
	var notes [][2]string
	p.SetNotifier(func(_ context.Context, m, a string) { notes = append(notes, [2]string{m, a}) })
	require.NoError(t, e.fake.answer3DS(res.ActionURL, true))
	piID := res.ActionURL[strings.LastIndexByte(res.ActionURL, '/')+1:]
	rec := httptest.NewRecorder()
	p.ReturnHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stripe/return?account="+testAccount+"&payment_intent="+piID, nil))
	require.Equal(t, [][2]string{{testAccount, r.AttemptID}}, notes)
	got, err := p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, got.Status, "the buyer sees the charge succeed at once")
	assert.Equal(t, piID, got.OrderID)
}

func TestLookupAndVoidReadTheChargedIntentByID(t *testing.T) {
	e := newEnv(t)
	e.fake.set(func(f *fakeStripe) { f.searchLag = 30 * time.Minute })
	ctx := t.Context()
	r := charge(fakeCardSucceeds)
	res, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	got, err := e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, got.Status)
	assert.Equal(t, res.OrderID, got.OrderID)
	require.NoError(t, e.p.Void(ctx, testAccount, r.AttemptID))
	got, err = e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.True(t, got.Voided)
	assert.Zero(t, e.fake.searchCount())
}

func TestHintsAreBounded(t *testing.T) {
	p, err := stripe.New(stripe.Config{HintSize: 3})
	require.NoError(t, err)
	for i := range 10 {
		stripe.PutHint(p, testAccount, "att_"+string(rune('a'+i)), "pi_x")
	}
	assert.Equal(t, 3, stripe.HintCount(p))
}

// Row 4: docs.stripe.com/api/errors, /error-codes — the probe is
// answered "unused" only by the refusal of its own parameter.
func TestKeyProbeFailsClosed(t *testing.T) {
	for name, answer := range map[string]*fakeErr{
		"another_parameter": func() *fakeErr {
			e := stripeError(400, "invalid_request_error", "parameter_missing", "Missing required param: amount.")
			e.body["param"] = "amount"
			return e
		}(),
		"no_code":     stripeError(400, "invalid_request_error", "", "Something else."),
		"not_found":   stripeError(404, "invalid_request_error", "resource_missing", "No such thing."),
		"api_version": stripeError(400, "invalid_request_error", "api_version_unsupported", "Unsupported."),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.fake.set(func(f *fakeStripe) { f.probeAnswer = answer })
			never := keelpay.NewID("att_")
			_, err := e.p.LookupCharge(t.Context(), testAccount, never)
			require.Error(t, err)
			assert.NotErrorIs(t, err, provider.ErrUnknownAttempt)
			assert.Contains(t, []provider.ErrorKind{provider.KindOutcomeUnknown, provider.KindUnavailable}, provider.KindOf(err), "%v", err)
			err = e.p.Void(t.Context(), testAccount, never)
			assert.NotErrorIs(t, err, provider.ErrUnknownAttempt)
			_, err = e.p.LookupRefund(t.Context(), testAccount, keelpay.NewID("rfatt_"))
			assert.NotErrorIs(t, err, provider.ErrUnknownAttempt)
		})
	}
}

// Row 5 and 13: docs.stripe.com/testing#refunds, /api/refunds/object.
func TestVoidFollowsItsRefundToTheEnd(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	var notes [][2]string
	var mu sync.Mutex
	e.p.SetNotifier(func(_ context.Context, m, a string) { mu.Lock(); notes = append(notes, [2]string{m, a}); mu.Unlock() })
	r := charge(fakeCardRefundFails)
	_, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	e.fake.advance(searchLag) // so that this checks the refund's status, not how the charge is found
	require.NoError(t, e.p.Void(ctx, testAccount, r.AttemptID), "the void's refund succeeded")
	got, err := e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.True(t, got.Voided)

	// The refund fails later: the charge is not voided any more, and the
	// service is told with the charge's attempt id.
	e.fake.advance(refundChange)
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) > 0 && notes[len(notes)-1] == [2]string{testAccount, r.AttemptID}
	}, 10*time.Second, 10*time.Millisecond, "the refund's failure notifies the voided charge")
	got, err = e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.False(t, got.Voided, "a void whose refund failed is not a void")

	// Voiding again makes a new refund, under a new key.
	require.NoError(t, e.p.Void(ctx, testAccount, r.AttemptID))
	var voids int
	for _, rf := range e.fake.refundList() {
		if rf["metadata"].(map[string]string)[stripe.MetaVoidOf] == r.AttemptID {
			voids++
		}
	}
	assert.Equal(t, 2, voids)
	got, err = e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.True(t, got.Voided)
	e.fake.set(func(f *fakeStripe) {
		assert.Contains(t, f.idem, testAccount+"|"+r.AttemptID+":void:1")
	})
}

func TestVoidWhoseRefundIsPendingIsUnknown(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	r := charge(fakeCardRefundPending)
	_, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	e.fake.advance(searchLag) // so that this checks the refund's status, not how the charge is found
	err = e.p.Void(ctx, testAccount, r.AttemptID)
	assert.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "%v", err)
	got, err := e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.False(t, got.Voided, "a pending refund has not returned the money yet")
	err = e.p.Void(ctx, testAccount, r.AttemptID)
	assert.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "still pending: %v", err)
	e.fake.advance(refundChange)
	require.NoError(t, e.p.Void(ctx, testAccount, r.AttemptID))
	got, err = e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.True(t, got.Voided)
	var voids int
	for _, rf := range e.fake.refundList() {
		if rf["metadata"].(map[string]string)[stripe.MetaVoidOf] == r.AttemptID {
			voids++
		}
	}
	assert.Equal(t, 1, voids, "a pending refund is waited for, not doubled")
}

func TestLookupRefundThatFailedAfterItSucceeded(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	var notes [][2]string
	var mu sync.Mutex
	e.p.SetRefundNotifier(func(_ context.Context, m, a string) { mu.Lock(); notes = append(notes, [2]string{m, a}); mu.Unlock() })
	c := charge(fakeCardRefundFails)
	res, err := e.p.Charge(ctx, c)
	require.NoError(t, err)
	rr := provider.RefundRequest{MerchantID: testAccount, AttemptID: keelpay.NewID("rfatt_"), ChargeAttemptID: c.AttemptID,
		OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency}
	out, err := e.p.Refund(ctx, rr)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, out.Status)

	e.fake.advance(refundChange)
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) > 0 && notes[len(notes)-1] == [2]string{testAccount, rr.AttemptID}
	}, 10*time.Second, 10*time.Millisecond, "refund.failed notifies the refund's attempt")
	for _, p := range []*stripe.Provider{e.p, e.restart(t)} {
		got, err := p.LookupRefund(ctx, testAccount, rr.AttemptID)
		require.NoError(t, err)
		require.Equal(t, provider.RefundFailed, got.Status)
		assert.Contains(t, got.Failure.Message, "expired_or_canceled_card")
	}
}

// Row 6: docs.stripe.com/rate-limits, /error-low-level.
func TestLockTimeoutIsOutcomeUnknown(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.fake.set(func(f *fakeStripe) { f.lockTimeout["/v1/payment_intents"] = true })
	r := charge(fakeCardSucceeds)
	_, err := e.p.Charge(ctx, r)
	assert.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "a lock_timeout after the charge was made: %v", err)
	assert.Equal(t, 1, e.fake.chargeCount(r.AttemptID))

	e.fake.set(func(f *fakeStripe) { f.lockTimeout = map[string]bool{"/v1/refunds": true} })
	c := charge(fakeCardSucceeds)
	res, err := e.p.Charge(ctx, c)
	require.NoError(t, err)
	_, err = e.p.Refund(ctx, provider.RefundRequest{MerchantID: testAccount, AttemptID: keelpay.NewID("rfatt_"),
		ChargeAttemptID: c.AttemptID, OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency})
	assert.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "%v", err)
	err = e.p.Void(ctx, testAccount, c.AttemptID)
	assert.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "%v", err)
}

func TestOnlyARateLimitIsUnavailable(t *testing.T) {
	for code, want := range map[string]provider.ErrorKind{
		"rate_limit":   provider.KindUnavailable,
		"lock_timeout": provider.KindOutcomeUnknown,
		"":             provider.KindOutcomeUnknown,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/payment_intents" {
				writeJSON(w, 200, map[string]any{"id": "x_1", "object": "payment_method", "card": map[string]any{"brand": "visa"}})
				return
			}
			e := map[string]any{"type": "invalid_request_error", "message": "Too many requests."}
			if code != "" {
				e["code"] = code
			}
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": e})
		}))
		t.Cleanup(srv.Close)
		p, err := stripe.New(stripe.Config{APIURL: srv.URL, ReturnURL: "https://pay.example/r", RawCardData: true,
			Accounts: []stripe.Account{{ID: testAccount, Key: testKey}}})
		require.NoError(t, err)
		r := charge(fakeCardSucceeds)
		r.NewCard, r.CardToken = nil, "cus_1/pm_1"
		_, err = p.Charge(t.Context(), r)
		assert.Equal(t, want, provider.KindOf(err), "429 %q: %v", code, err)
	}
}

// Row 7: docs.stripe.com/api/payment_intents/object — amount_received.
func TestChargeReportsAmountReceived(t *testing.T) {
	e := newEnv(t)
	e.fake.set(func(f *fakeStripe) { f.received = 1999 })
	r := charge(fakeCardSucceeds)
	res, err := e.p.Charge(t.Context(), r)
	require.NoError(t, err)
	assert.Equal(t, int64(1999), res.Amount, "what was received, not what was asked")
	got, err := e.p.LookupCharge(t.Context(), testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, int64(1999), got.Amount)
}

// Row 8: docs.stripe.com/currencies#zero-decimal.
func TestCheckApplicationRefusesZeroDecimalCurrency(t *testing.T) {
	for _, cur := range []string{"jpy", "krw", "kwd"} {
		f := newFakeStripe(t)
		f.addAccount("rk_test_x", &fakeAccount{id: "acct_x", currency: cur, chargesEnabled: true})
		p, err := stripe.New(stripe.Config{APIURL: f.srv.URL, ReturnURL: "https://pay.example/r"})
		require.NoError(t, err)
		_, err = p.CheckApplication(t.Context(), provider.Credentials{ClientID: "acct_x", ClientSecret: "rk_test_x"})
		require.Error(t, err, cur)
		assert.Equal(t, provider.KindInvalidRequest, provider.KindOf(err))
		assert.ErrorContains(t, err, "two-decimal")
		assert.ErrorContains(t, err, strings.ToUpper(cur))
	}
}

// Row 9: docs.stripe.com/webhooks, /api/events/retrieve.
func TestWebhookOfAnAccountAddedAtRuntime(t *testing.T) {
	f := newFakeStripe(t)
	f.addAccount("rk_test_new", &fakeAccount{id: "acct_new", currency: "eur", chargesEnabled: true, rawCards: true,
		webhookSecret: "whsec_the_operator_did_not_configure"})
	p, err := stripe.New(stripe.Config{APIURL: f.srv.URL, ReturnURL: "https://pay.example/r", RawCardData: true})
	require.NoError(t, err)
	hook := httptest.NewServer(p.WebhookHandler())
	t.Cleanup(hook.Close)
	f.set(func(f *fakeStripe) { f.webhooks = append(f.webhooks, hook.URL) })
	notes := make(chan [2]string, 4)
	p.SetNotifier(func(_ context.Context, m, a string) { notes <- [2]string{m, a} })
	_, err = p.CheckApplication(t.Context(), provider.Credentials{ClientID: "acct_new", ClientSecret: "rk_test_new"})
	require.NoError(t, err)

	r := charge(fakeCard3DS)
	r.MerchantID, r.NewCard.MerchantID = "acct_new", "acct_new"
	res, err := p.Charge(t.Context(), r)
	require.NoError(t, err)
	require.NoError(t, f.answer3DS(res.ActionURL, true), "the webhook is accepted")
	select {
	case n := <-notes:
		assert.Equal(t, [2]string{"acct_new", r.AttemptID}, n)
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
	}

	// A forged event, unsigned and unknown to Stripe, is refused.
	body := `{"id":"evt_forged","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","metadata":{"keelpay_attempt_id":"att_x","keelpay_merchant_id":"acct_new"}}}}`
	resp, err := http.Post(hook.URL, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Empty(t, notes)
}

// Row 10: refund webhooks reach the RefundNotifier, a void's the
// charge's NotifyFunc.
func TestRefundWebhooksNotify(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	refunds := make(chan [2]string, 8)
	e.p.SetRefundNotifier(func(_ context.Context, m, a string) { refunds <- [2]string{m, a} })
	c := charge(fakeCardRefundPending)
	res, err := e.p.Charge(ctx, c)
	require.NoError(t, err)
	rr := provider.RefundRequest{MerchantID: testAccount, AttemptID: keelpay.NewID("rfatt_"), ChargeAttemptID: c.AttemptID,
		OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency}
	_, err = e.p.Refund(ctx, rr)
	assert.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "a pending refund: %v", err)
	e.fake.advance(refundChange)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-refunds:
			if n == [2]string{testAccount, rr.AttemptID} {
				got, err := e.p.LookupRefund(ctx, testAccount, rr.AttemptID)
				require.NoError(t, err)
				assert.Equal(t, provider.RefundSucceeded, got.Status)
				return
			}
		case <-deadline:
			t.Fatal("no refund notification")
		}
	}
}

// Row 11: docs.stripe.com/security/guide — SAQ A with Stripe.js, raw card
// numbers only on accounts enabled for them.
func TestBrowserElement(t *testing.T) {
	e := newEnv(t)
	el, err := e.p.BrowserElement(t.Context(), testAccount)
	require.NoError(t, err)
	assert.Equal(t, provider.Element{Kind: provider.ElementStripe, ScriptURL: "https://js.stripe.com/v3/", PublishableKey: testPublishableKey,
		ConnectSources: []string{e.fake.srv.URL}, FrameSources: []string{"https://js.stripe.com", "https://hooks.stripe.com"},
		ScriptSources: []string{"https://js.stripe.com"}}, *el)

	p, err := stripe.New(stripe.Config{Accounts: []stripe.Account{{ID: testAccount, Key: testKey}}, JSURL: e.fake.jsURL()})
	require.NoError(t, err)
	_, err = p.BrowserElement(t.Context(), testAccount)
	assert.Equal(t, provider.KindInvalidRequest, provider.KindOf(err))
	assert.ErrorContains(t, err, "PublishableKey")
}

// browserPaymentMethod makes a PaymentMethod as Stripe.js does from the
// buyer's browser: with the publishable key.
func browserPaymentMethod(t *testing.T, f *fakeStripe, number string) string {
	t.Helper()
	form := "key=" + testPublishableKey + "&type=card&card[number]=" + number + "&card[exp_month]=12&card[exp_year]=2031&card[cvc]=123&billing_details[name]=Jane"
	res, err := http.Post(f.srv.URL+"/v1/payment_methods", "application/x-www-form-urlencoded", strings.NewReader(form))
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var v struct {
		ID string `json:"id"`
	}
	require.NoError(t, decodeJSON(res, &v))
	return v.ID
}

func TestSaveCardAndChargeWithAPaymentMethod(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	pm := browserPaymentMethod(t, e.fake, "5555555555554444")
	saved, err := e.p.SaveCard(ctx, provider.SaveCardRequest{MerchantID: testAccount, PaymentMethod: pm})
	require.NoError(t, err)
	assert.Equal(t, provider.BrandMastercard, saved.Brand)
	assert.Equal(t, "4444", saved.Last4)
	assert.Equal(t, 12, saved.ExpMonth)
	assert.Equal(t, 2031, saved.ExpYear)
	assert.True(t, strings.HasSuffix(saved.Token, "/"+pm))

	r := charge("")
	r.NewCard = &provider.SaveCardRequest{MerchantID: testAccount, PaymentMethod: browserPaymentMethod(t, e.fake, fakeCardSucceeds)}
	res, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status)
	assert.Equal(t, "4242", res.Card.Last4)
	assert.Equal(t, provider.BrandVisa, res.Card.Brand)

	_, err = e.p.SaveCard(ctx, provider.SaveCardRequest{MerchantID: testAccount, PaymentMethod: "pm_unknown"})
	assert.Equal(t, provider.KindCardRejected, provider.KindOf(err))
}

func TestRawCardNumbersNeedRawCardData(t *testing.T) {
	f := newFakeStripe(t)
	f.addAccount(testKey, &fakeAccount{id: testAccount, currency: "eur", chargesEnabled: true, rawCards: true})
	p, err := stripe.New(stripe.Config{APIURL: f.srv.URL, ReturnURL: "https://pay.example/r",
		Accounts: []stripe.Account{{ID: testAccount, Key: testKey}}})
	require.NoError(t, err)
	_, err = p.SaveCard(t.Context(), *charge(fakeCardSucceeds).NewCard)
	require.Equal(t, provider.KindCardRejected, provider.KindOf(err))
	assert.ErrorContains(t, err, "RawCardData")
	assert.ErrorContains(t, err, "KEELPAY_STRIPE_RAW_CARD_DATA=1")
	assert.ErrorContains(t, err, "SAQ D")
	res, err := p.Charge(t.Context(), charge(fakeCardSucceeds))
	require.NoError(t, err)
	require.Equal(t, provider.ChargeFailed, res.Status)
	assert.Equal(t, provider.FailureCardRejected, res.Failure.Code)
	assert.Contains(t, res.Failure.Message, "RawCardData")
	f.mu.Lock()
	defer f.mu.Unlock()
	assert.Empty(t, f.requests, "refused before any call")
}

func TestFakeRefusesRawNumbersFromASecretKey(t *testing.T) {
	f := newFakeStripe(t)
	f.addAccount(testKey, &fakeAccount{id: testAccount, currency: "eur", chargesEnabled: true, publishableKey: testPublishableKey})
	p, err := stripe.New(stripe.Config{APIURL: f.srv.URL, ReturnURL: "https://pay.example/r", RawCardData: true,
		Accounts: []stripe.Account{{ID: testAccount, Key: testKey}}})
	require.NoError(t, err)
	_, err = p.SaveCard(t.Context(), *charge(fakeCardSucceeds).NewCard)
	require.Equal(t, provider.KindCardRejected, provider.KindOf(err))
	assert.ErrorContains(t, err, "raw card data")
	assert.NotEmpty(t, browserPaymentMethod(t, f, fakeCardSucceeds), "a publishable key may send the number, as Stripe.js does")
}

// Row 12: the Stripe.js stand-in is served.
func TestStripeJSStandInIsServed(t *testing.T) {
	f := newFakeStripe(t)
	res, err := http.Get(f.jsURL())
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, res.Header.Get("Content-Type"), "javascript")
	for _, want := range []string{"createPaymentMethod", "elements", "mount", "clear", "/v1/payment_methods", `"key"`} {
		assert.Contains(t, stripeJSStandIn, want)
	}
}

// The fake's helpers for browser tests: a refund made to fail at once, and
// the charges it holds.
func TestFakeFailsARefundOnCall(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := charge(fakeCardRefundFails)
	res, err := e.p.Charge(ctx, c)
	require.NoError(t, err)
	require.Len(t, e.fake.chargeList(), 1)
	assert.Equal(t, res.OrderID, e.fake.chargeList()[0]["id"])
	rr := provider.RefundRequest{MerchantID: testAccount, AttemptID: keelpay.NewID("rfatt_"), ChargeAttemptID: c.AttemptID,
		OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency}
	out, err := e.p.Refund(ctx, rr)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, out.Status)
	e.fake.failRefundsNow()
	got, err := e.p.LookupRefund(ctx, testAccount, rr.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.RefundFailed, got.Status)
}

// standInDriver runs the Stripe.js stand-in in Node with a minimal DOM
// (Node has fetch and URLSearchParams): it mounts the card element, types
// the card, and prints what createPaymentMethod resolves to.
const standInDriver = `
const [src, key, number, expiry] = process.argv.slice(1); // with -e, the arguments follow node itself
function el(tag) {
  const handlers = {};
  return { tagName: tag, value: "", children: [], setAttribute() {},
    addEventListener(ev, fn) { (handlers[ev] = handlers[ev] || []).push(fn); },
    fire(ev) { (handlers[ev] || []).forEach((fn) => fn()); },
    appendChild(c) { this.children.push(c); } };
}
const root = el("div");
globalThis.window = globalThis;
globalThis.document = { currentScript: { src }, createElement: el, querySelector: (s) => (s === "#card" ? root : null) };
(async () => {
  const code = await (await fetch(src)).text();
  eval(code);
  const stripe = Stripe(key);
  const card = stripe.elements().create("card", {});
  let changes = 0;
  card.on("change", () => { changes++; });
  card.mount("#card");
  const [n, e, c] = root.children;
  n.value = number; n.fire("input");
  e.value = expiry; e.fire("input");
  c.value = "123"; c.fire("input");
  const res = await stripe.createPaymentMethod({ type: "card", card, billing_details: { name: "Jane Roe" } });
  card.clear();
  console.log(JSON.stringify({ res, changes, cleared: n.value === "" }));
})().catch((err) => { console.error(err); process.exit(1); });
`

func TestStripeJSStandInMakesAPaymentMethod(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	e := newEnv(t)
	run := func(number, expiry string) map[string]any {
		out, err := exec.CommandContext(t.Context(), node, "-e", standInDriver, e.fake.jsURL(), testPublishableKey, number, expiry).CombinedOutput()
		require.NoError(t, err, "%s", out)
		var v map[string]any
		require.NoError(t, json.Unmarshal(out, &v), "%s", out)
		return v
	}
	v := run("4242 4242 4242 4242", "12 / 31")
	pm := v["res"].(map[string]any)["paymentMethod"].(map[string]any)
	assert.Equal(t, "4242", pm["card"].(map[string]any)["last4"])
	assert.EqualValues(t, 2031, pm["card"].(map[string]any)["exp_year"])
	assert.EqualValues(t, 4, v["changes"], "a change for each field, and one for clear")
	assert.Equal(t, true, v["cleared"])

	// The browser's PaymentMethod charges through the adapter.
	r := charge("")
	r.NewCard = &provider.SaveCardRequest{MerchantID: testAccount, PaymentMethod: pm["id"].(string)}
	res, err := e.p.Charge(t.Context(), r)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, res.Status)

	v = run(fakeCardBadNumber, "12 / 31")
	assert.Equal(t, "incorrect_number", v["res"].(map[string]any)["error"].(map[string]any)["code"])
}
