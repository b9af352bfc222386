package httpprovider_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/httpprovider"
)

// TestBrowserElementAcrossProcesses: a sandbox served to another process
// keeps its browser element there: the client describes the sandbox's
// element (its script on the sandbox's server), and a card its element
// captured is saved and charged by reference through the client.
func TestBrowserElementAcrossProcesses(t *testing.T) {
	b := setup(t, nil)
	el, err := b.client.BrowserElement(b.ctx, merchant)
	require.NoError(t, err)
	want, err := b.sb.BrowserElement(b.ctx, merchant)
	require.NoError(t, err)
	require.Equal(t, want, el)
	require.Equal(t, b.srv.URL+"/sandbox/elements/v1/element.js", el.ScriptURL)

	// The element posts the card to the sandbox's own server.
	elements := httptest.NewServer(b.sb.ElementHandler())
	t.Cleanup(elements.Close)
	body, err := json.Marshal(map[string]any{"key": el.PublishableKey, "number": "5555555555554444", "exp_month": 12, "exp_year": 2030, "cvc": "123"})
	require.NoError(t, err)
	resp, err := http.Post(elements.URL+"/sandbox/elements/v1/payment_methods", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	var pm struct{ ID string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&pm))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	saved, err := b.client.SaveCard(b.ctx, provider.SaveCardRequest{MerchantID: merchant, PaymentMethod: pm.ID})
	require.NoError(t, err)
	require.Equal(t, "4444", saved.Last4)
	res, err := b.client.Charge(b.ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_pm", Amount: 1234, Currency: "EUR",
		NewCard: &provider.SaveCardRequest{MerchantID: merchant, PaymentMethod: pm.ID}})
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status)
	require.Equal(t, "mastercard", res.Card.Brand)

	// The sandbox switched off: the element cannot be had either.
	b.sb.SetUnavailable(true)
	_, err = b.client.BrowserElement(b.ctx, merchant)
	require.Equal(t, provider.KindUnavailable, provider.KindOf(err))
}

// TestBrowserElementOfAProviderWithoutOne: the client of a provider with
// no element answers nil, so the card field takes the card itself.
func TestBrowserElementOfAProviderWithoutOne(t *testing.T) {
	b := setup(t, nil)
	srv := httptest.NewServer(httpprovider.NewHandler(struct{ provider.Provider }{b.sb}))
	t.Cleanup(srv.Close)
	el, err := newClient(t, srv.URL, 0).BrowserElement(b.ctx, merchant)
	require.NoError(t, err)
	require.Nil(t, el)
}
