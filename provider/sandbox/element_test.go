package sandbox_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// createPM posts a card to the element's route as the element does.
func createPM(t *testing.T, sb *sandbox.Sandbox, key, number string, expYear int) (int, map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"key": key, "number": number, "exp_month": 12, "exp_year": expYear, "cvc": "123", "name": "Jane Roe"})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	sb.ElementHandler().ServeHTTP(rec, httptest.NewRequest("POST", "/sandbox/elements/v1/payment_methods", bytes.NewReader(body)))
	require.Equal(t, "*", rec.Header().Get("Access-Control-Allow-Origin"))
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return rec.Code, out
}

func TestBrowserElement(t *testing.T) {
	b := setup(t)
	el, err := b.sb.BrowserElement(b.ctx, merchant)
	require.NoError(t, err)
	require.Equal(t, provider.ElementSandbox, el.Kind)
	require.Equal(t, "https://sandbox.test/sandbox/elements/v1/element.js", el.ScriptURL)
	require.Equal(t, []string{"https://sandbox.test"}, el.ScriptSources)
	require.Equal(t, []string{"https://sandbox.test"}, el.ConnectSources)
	require.True(t, strings.HasPrefix(el.PublishableKey, "pk_sandbox_"), el.PublishableKey)
	other, err := b.sb.BrowserElement(b.ctx, "merch_other")
	require.NoError(t, err)
	require.NotEqual(t, el.PublishableKey, other.PublishableKey, "a key per merchant")

	// The script is served with the API the card field calls.
	rec := httptest.NewRecorder()
	b.sb.ElementHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/sandbox/elements/v1/element.js", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/javascript; charset=utf-8", rec.Header().Get("Content-Type"))
	for _, s := range []string{"window.KeelpaySandbox", "createPaymentMethod", "prototype.mount", "'change'"} {
		require.Contains(t, rec.Body.String(), s)
	}
	// A CORS preflight of the card field on another origin.
	rec = httptest.NewRecorder()
	b.sb.ElementHandler().ServeHTTP(rec, httptest.NewRequest("OPTIONS", "/sandbox/elements/v1/payment_methods", nil))
	require.Equal(t, http.StatusNoContent, rec.Code)
	require.Equal(t, "Content-Type", rec.Header().Get("Access-Control-Allow-Headers"))

	b.sb.SetUnavailable(true)
	_, err = b.sb.BrowserElement(b.ctx, merchant)
	require.Equal(t, provider.KindUnavailable, provider.KindOf(err))
}

func TestPaymentMethodOfTheElement(t *testing.T) {
	b := setup(t)
	el, err := b.sb.BrowserElement(b.ctx, merchant)
	require.NoError(t, err)
	key := el.PublishableKey

	// The element's route judges the card as the sandbox does.
	for _, tc := range []struct {
		key, number string
		year        int
		status      int
		code        string
	}{
		{"pk_x", sandbox.CardVisa, 2030, http.StatusUnauthorized, "invalid_key"},
		{key, "4242424242424241", 2030, http.StatusPaymentRequired, "invalid_number"},
		{key, sandbox.CardVisa, 2025, http.StatusPaymentRequired, "expired_card"},
	} {
		status, out := createPM(t, b.sb, tc.key, tc.number, tc.year)
		require.Equal(t, tc.status, status, "%v", out)
		require.Equal(t, tc.code, out["error"].(map[string]any)["code"], "%v", out)
	}

	status, out := createPM(t, b.sb, key, sandbox.CardMastercard, 2030)
	require.Equal(t, http.StatusOK, status, "%v", out)
	pm := out["id"].(string)
	require.True(t, strings.HasPrefix(pm, "pm_"), pm)
	require.Equal(t, map[string]any{"brand": "mastercard", "last4": "4444", "exp_month": 12.0, "exp_year": 2030.0}, out["card"])

	// Saved by its reference, with the card's details from the sandbox.
	saved, err := b.sb.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: merchant, PaymentMethod: pm})
	require.NoError(t, err)
	require.Equal(t, provider.SavedCard{Token: saved.Token, Brand: "mastercard", Last4: "4444", ExpMonth: 12, ExpYear: 2030}, *saved)
	res, err := b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_1", Amount: 1234, Currency: "EUR", CardToken: saved.Token})
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status)

	// Another merchant's reference, or an unknown one, is refused.
	_, err = b.sb.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: "merch_other", PaymentMethod: pm})
	require.Equal(t, provider.KindCardRejected, provider.KindOf(err))
	_, err = b.sb.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: merchant, PaymentMethod: "pm_unknown"})
	require.Equal(t, provider.KindCardRejected, provider.KindOf(err))
	res, err = b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: "merch_other", AttemptID: "att_2", Amount: 1234, Currency: "EUR",
		NewCard: &provider.SaveCardRequest{MerchantID: "merch_other", PaymentMethod: pm}})
	require.NoError(t, err)
	require.Equal(t, provider.ChargeFailed, res.Status)
	require.Equal(t, provider.FailureCardRejected, res.Failure.Code)

	// The test cards behave as typed ones: rejected at save, declined at
	// charge, 3D Secure.
	_, out = createPM(t, b.sb, key, sandbox.CardRejected, 2030)
	_, err = b.sb.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: merchant, PaymentMethod: out["id"].(string)})
	require.Equal(t, provider.KindCardRejected, provider.KindOf(err))
	for number, want := range map[string]provider.ChargeStatus{
		sandbox.CardDeclined:     provider.ChargeFailed,
		sandbox.CardThreeDSecure: provider.ChargeRequiresAction,
		sandbox.CardVisa:         provider.ChargeSucceeded,
	} {
		_, out = createPM(t, b.sb, key, number, 2030)
		res, err = b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_" + number, Amount: 1234, Currency: "EUR",
			NewCard: &provider.SaveCardRequest{MerchantID: merchant, PaymentMethod: out["id"].(string)}})
		require.NoError(t, err)
		require.Equal(t, want, res.Status, number)
		require.Equal(t, number[len(number)-4:], res.Card.Last4)
	}
}
