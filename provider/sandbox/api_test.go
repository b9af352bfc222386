package sandbox_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/httpprovider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// TestAPIHandlerServesTheProviderAndItsStats charges through the API
// handler with an httpprovider client and reads the money moved back from
// the stats endpoint. (Every method and error of the protocol is tested in
// package httpprovider.)
func TestAPIHandlerServesTheProviderAndItsStats(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := httptest.NewServer(b.sb.APIHandler())
	t.Cleanup(srv.Close)
	client, err := httpprovider.New(httpprovider.Config{BaseURL: srv.URL})
	require.NoError(t, err)

	for _, c := range []struct{ attempt, number string }{
		{"att_1", sandbox.CardVisa}, {"att_2", sandbox.CardDeclined}, {"att_3", sandbox.CardCurrencyMismatch}, {"att_4", sandbox.CardThreeDSecure},
	} {
		_, err := client.Charge(b.ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: c.attempt, NewCard: newCard(c.number), Amount: 1234, Currency: "EUR"})
		require.NoError(t, err, c.number)
	}
	require.NoError(t, client.Void(b.ctx, merchant, "att_3"))
	res, err := client.LookupCharge(b.ctx, merchant, "att_1")
	require.NoError(t, err)
	refund, err := client.Refund(b.ctx, provider.RefundRequest{MerchantID: merchant, AttemptID: "rfatt_1", ChargeAttemptID: "att_1",
		OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency})
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, refund.Status)
	// The same attempt id from another merchant is another charge.
	_, err = b.sb.Charge(b.ctx, provider.ChargeRequest{MerchantID: "merch_other", AttemptID: "att_1", NewCard: newCard(sandbox.CardVisa), Amount: 1, Currency: "EUR"})
	require.NoError(t, err)

	want := sandbox.Stats{Charges: 3, ChargesByAttempt: map[string]int{"att_1": 2, "att_3": 1}, Refunds: 1, RefundsByAttempt: map[string]int{"rfatt_1": 1}, Voids: 1, VoidedByAttempt: map[string]int{"att_3": 1}}
	require.Equal(t, want, b.sb.Stats())
	resp, err := http.Get(srv.URL + httpprovider.PathPrefix + "stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var got sandbox.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, want, got)
	require.Equal(t, b.sb.ChargeCount("att_1"), got.ChargesByAttempt["att_1"])
	require.Equal(t, 1, b.sb.RefundCount("rfatt_1"))
	require.Zero(t, b.sb.RefundCount("rfatt_2"))
}
