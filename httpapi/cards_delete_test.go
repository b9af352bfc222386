package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// saveCardFor saves a card for a customer of the store and returns its id.
func (b *bundle) saveCardFor(t *testing.T, s shop, customerID string) string {
	t.Helper()
	cust := customerJSON()
	cust["id"] = customerID
	session := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer": cust, "page_origins": []string{"https://shop.example"},
	}})
	require.Equal(t, http.StatusCreated, session.Status, "%s", session.Raw)
	r := b.capture(t, s, session, sandbox.CardVisa)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.str("id")
}

// cardIDs reads a list answer's ids, newest first.
func cardIDs(t *testing.T, r *response) []string {
	t.Helper()
	ids, _ := listIDs(t, r)
	return ids
}

// GET /v1/cards lists one customer's cards of the store, newest first, in
// pages, and judges its query as the other lists do.
func TestCardListPagesAndValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	other := b.shop(t, "app_other")
	var ids []string // oldest first
	for range 3 {
		ids = append(ids, b.saveCardFor(t, s, custID))
		b.clock.Advance(time.Second)
	}
	elsewhere := b.saveCardFor(t, s, "cus_someone_else")
	b.saveCardFor(t, other, custID)

	list := func(query string) *response {
		return b.do(t, req{method: "GET", path: "/v1/cards?" + query, key: s.sk})
	}
	r := list("customer=" + custID)
	require.Equal(t, []string{ids[2], ids[1], ids[0]}, cardIDs(t, r), "newest first, only this store's and customer's")
	require.Equal(t, false, r.Body["has_more"])
	first := r.Body["data"].([]any)[0]
	require.Equal(t, b.do(t, req{method: "GET", path: "/v1/cards/" + ids[2], key: s.sk}).Body, first, "a card as GET shows it")

	r = list("customer=" + custID + "&limit=2")
	require.Equal(t, []string{ids[2], ids[1]}, cardIDs(t, r))
	require.Equal(t, true, r.Body["has_more"])
	r = list("customer=" + custID + "&limit=2&starting_after=" + ids[1])
	require.Equal(t, []string{ids[0]}, cardIDs(t, r))
	require.Equal(t, false, r.Body["has_more"])
	r = list("customer=" + custID + "&limit=1&ending_before=" + ids[0])
	require.Equal(t, []string{ids[1]}, cardIDs(t, r))
	require.Equal(t, true, r.Body["has_more"])
	require.Equal(t, []string{elsewhere}, cardIDs(t, list("customer=cus_someone_else")))
	require.Empty(t, cardIDs(t, list("customer=cus_nobody")))
	require.Equal(t, []string{ids[2]}, cardIDs(t, list("customer="+url.QueryEscape(custID)+"&limit=1")))

	for _, c := range []struct{ query, field, code string }{
		{"", "customer", "missing_customer"},
		{"customer=", "customer", "missing_customer"},
		{"customer=" + strings.Repeat("x", 65), "customer", "invalid_customer"},
		{"customer=" + custID + "&limit=0", "limit", "invalid_limit"},
		{"customer=" + custID + "&limit=101", "limit", "invalid_limit"},
		{"customer=" + custID + "&starting_after=" + elsewhere, "starting_after", "invalid_starting_after"},
		{"customer=" + custID + "&starting_after=card_nope", "starting_after", "invalid_starting_after"},
		{"customer=" + custID + "&starting_after=", "starting_after", "invalid_starting_after"},
		{"customer=" + custID + "&starting_after=" + ids[1] + "&ending_before=" + ids[0], "ending_before", "invalid_ending_before"},
		{"customer=" + custID + "&customer=" + custID, "customer", "duplicate_parameter"},
		{"customer=" + custID + "&status=active", "status", "unknown_parameter"},
	} {
		requireInvalid(t, list(c.query), c.field, c.code)
	}
	requireError(t, b.do(t, req{method: "GET", path: "/v1/cards?customer=" + custID, key: s.pk}), http.StatusUnauthorized, "invalid_api_key")
}

// DELETE /v1/cards/{id} detaches the card at the provider and deletes it:
// it is no longer read, listed or charged, here or at the provider.
func TestDeleteCard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	other := b.shop(t, "app_other")
	cardID := b.saveCard(t, s, sandbox.CardVisa)
	kept := b.saveCard(t, s, sandbox.CardMastercard)
	body := intentBody(s, 1500)
	body["payment_method"] = cardID
	intent := b.createIntent(t, s, body)
	card, err := b.db.CardGet(context.Background(), s.id, cardID)
	require.NoError(t, err)
	st, err := b.db.StoreGetByID(context.Background(), s.id)
	require.NoError(t, err)

	requireError(t, b.do(t, req{method: "DELETE", path: "/v1/cards/" + cardID, key: other.sk}), http.StatusNotFound, "card_not_found")
	requireError(t, b.do(t, req{method: "DELETE", path: "/v1/cards/" + cardID, key: s.pk}), http.StatusUnauthorized, "invalid_api_key")
	requireInvalid(t, b.do(t, req{method: "DELETE", path: "/v1/cards/" + cardID, key: s.sk, body: map[string]any{"status": "x"}}), "status", "unknown_field")

	want := b.do(t, req{method: "GET", path: "/v1/cards/" + cardID, key: s.sk}).Body
	r := b.do(t, req{method: "DELETE", path: "/v1/cards/" + cardID, key: s.sk})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, want, r.Body, "the card as it was")

	requireError(t, b.do(t, req{method: "GET", path: "/v1/cards/" + cardID, key: s.sk}), http.StatusNotFound, "card_not_found")
	requireError(t, b.do(t, req{method: "DELETE", path: "/v1/cards/" + cardID, key: s.sk}), http.StatusNotFound, "card_not_found")
	require.Equal(t, []string{kept}, cardIDs(t, b.do(t, req{method: "GET", path: "/v1/cards?customer=" + custID, key: s.sk})))
	requireError(t, b.confirmSaved(t, s, pi(t, intent), cardID), http.StatusNotFound, "card_not_found")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + pi(t, intent) + "/confirm", key: s.sk, body: map[string]any{}}),
		http.StatusNotFound, "card_not_found")
	requireStatus(t, b.getIntent(t, s, pi(t, intent)), http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	requireStatus(t, b.confirmSaved(t, s, pi(t, intent), kept), http.StatusOK, keelpay.IntentSucceeded)

	// The provider forgot the token: a charge of it fails.
	res, err := b.sandbox.Charge(context.Background(), provider.ChargeRequest{MerchantID: st.MerchantID, AttemptID: "att_after_delete",
		CardToken: card.ProviderToken, Amount: 100, Currency: s.currency})
	require.NoError(t, err)
	require.Equal(t, provider.ChargeFailed, res.Status)
	require.Equal(t, provider.FailureCardUnavailable, res.Failure.Code)
}

// A provider that cannot detach the card: 503, and the card stays, so the
// deletion can be repeated.
func TestDeleteCardProviderUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	cardID := b.saveCard(t, s, sandbox.CardVisa)
	b.sandbox.SetUnavailable(true)
	r := b.do(t, req{method: "DELETE", path: "/v1/cards/" + cardID, key: s.sk})
	requireError(t, r, http.StatusServiceUnavailable, "provider_api_unavailable")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/cards/" + cardID, key: s.sk}).Status)
	b.sandbox.SetUnavailable(false)
	require.Equal(t, http.StatusOK, b.do(t, req{method: "DELETE", path: "/v1/cards/" + cardID, key: s.sk}).Status)
	requireError(t, b.do(t, req{method: "GET", path: "/v1/cards/" + cardID, key: s.sk}), http.StatusNotFound, "card_not_found")
}

// POST /v1/customers/{id}/erase deletes the customer's cards and removes
// its personal data from intents and card sessions, keeping the id and
// the books; afterwards the SQLite files hold none of it (in clear: the
// data is sealed, and the erasure empties the sealed columns too).
func TestEraseCustomer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	other := b.shop(t, "app_other")
	cardID := b.saveCard(t, s, sandbox.CardVisa)
	b.saveCard(t, s, sandbox.CardMastercard)
	open := b.session(t, s)
	paid := b.createIntent(t, s, intentBody(s, 2500))
	requireStatus(t, b.confirmNew(t, s, paid, sandbox.CardVisa, map[string]any{
		"billing": map[string]any{"country": "DE", "state": state, "postal_code": postal}}), http.StatusOK, keelpay.IntentSucceeded)
	someoneElse := intentBody(s, 100)
	someoneElse["customer"] = map[string]any{"id": "cus_other", "name": "Olga Otherperson", "email": "olga@other.example", "phone": "+4915100000001"}
	keptIntent := b.createIntent(t, s, someoneElse)
	otherStore := b.createIntent(t, other, intentBody(other, 100))

	b.sandbox.SetUnavailable(true)
	r := b.do(t, req{method: "POST", path: "/v1/customers/" + custID + "/erase", key: s.sk})
	requireError(t, r, http.StatusServiceUnavailable, "provider_api_unavailable")
	b.sandbox.SetUnavailable(false)
	require.Equal(t, custName, b.getIntent(t, s, pi(t, paid)).Body["customer"].(map[string]any)["name"], "nothing erased yet")

	erase := req{method: "POST", path: "/v1/customers/" + custID + "/erase", key: s.sk, header: map[string]string{"Idempotency-Key": "erase-42"}}
	r = b.do(t, erase)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, map[string]any{"object": "customer_erasure", "customer": custID,
		"cards_deleted": 2.0, "payment_intents": 1.0, "card_sessions": 3.0}, r.Body)
	again := b.do(t, erase)
	require.Equal(t, r.Body, again.Body, "the key replays the answer")
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))

	got := b.getIntent(t, s, pi(t, paid))
	require.Equal(t, map[string]any{"id": custID}, got.Body["customer"])
	require.NotContains(t, got.Body, "billing")
	require.Equal(t, "succeeded", got.Body["status"], "the books stay")
	require.Equal(t, 2500.0, got.Body["amount"])
	require.Equal(t, "4242", got.Body["payment_method"].(map[string]any)["last4"])
	cs := b.do(t, req{method: "GET", path: "/v1/card_sessions/" + open.str("id"), key: s.sk})
	require.Equal(t, map[string]any{"id": custID}, cs.Body["customer"])
	require.Equal(t, "expired", cs.Body["status"], "an open session saves no card after the erasure")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/cards/" + cardID, key: s.sk}), http.StatusNotFound, "card_not_found")
	require.Empty(t, cardIDs(t, b.do(t, req{method: "GET", path: "/v1/cards?customer=" + custID, key: s.sk})))
	require.Equal(t, "Olga Otherperson", b.getIntent(t, s, pi(t, keptIntent)).Body["customer"].(map[string]any)["name"])
	require.Equal(t, custName, b.getIntent(t, other, pi(t, otherStore)).Body["customer"].(map[string]any)["name"], "another store's customer of the same id")

	// A copy of the database files now holds none of the customer's data
	// but what another store keeps of its own customer of the same id:
	// erase that one too, then look.
	require.Equal(t, http.StatusOK, b.do(t, req{method: "POST", path: "/v1/customers/" + custID + "/erase", key: other.sk}).Status)
	var files []byte
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(b.path + suffix)
		if !os.IsNotExist(err) {
			require.NoError(t, err)
		}
		files = append(files, data...)
	}
	for _, v := range []string{custName, custEmail, custPhone, state, postal} {
		require.False(t, bytes.Contains(files, []byte(v)), "%q is still in the database files", v)
	}
	require.True(t, bytes.Contains(files, []byte("cus_other")), "the test reads the files")
	require.False(t, bytes.Contains(files, []byte("Olga Otherperson")), "another customer's name is sealed")

	r = b.do(t, req{method: "POST", path: "/v1/customers/cus_nobody/erase", key: s.sk})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, 0.0, r.Body["payment_intents"])
	requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/customers/" + strings.Repeat("x", 65) + "/erase", key: s.sk}), "id", "invalid_customer")
	requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/customers/" + custID + "/erase", key: s.sk, body: map[string]any{"x": 1}}), "x", "unknown_field")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/customers/" + custID + "/erase", key: s.pk}), http.StatusUnauthorized, "invalid_api_key")
}
