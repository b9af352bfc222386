package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// validCustomer is a customer object in JSON.
const validCustomer = `{"id":"cus_1","name":"Jane Roe","email":"jane@example.com","phone":"+4915112345678"}`

// validIntent builds an intent body in JSON text (so that key order, types
// and duplicates are exactly as written): the valid fields up to and
// including amount, currency and customer, then extra.
func validIntent(extra string) string {
	body := `{"amount":1000,"currency":"EUR","customer":` + validCustomer
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

func TestCreateIntentValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	cust := func(fields string) string { return `{"amount":1,"currency":"EUR","customer":{` + fields + `}}` }
	manyKeys := map[string]string{}
	for i := range 51 {
		manyKeys[fmt.Sprintf("k%d", i)] = "v"
	}
	many, _ := json.Marshal(manyKeys)
	tests := []struct {
		name, body  string
		field, code string
	}{
		// The body itself.
		{"not an object", `[]`, "", "invalid_json"},
		{"empty", ``, "", "invalid_json"},
		{"trailing data", `{"amount":1} {}`, "", "invalid_json"},
		// Unknown keys first, in body order, case-sensitive.
		{"unknown before invalid", `{"amount":"x","zz":1}`, "zz", "unknown_field"},
		{"first unknown in body order", `{"b":1,"amount":1,"a":2}`, "b", "unknown_field"},
		{"case-sensitive", `{"Amount":1}`, "Amount", "unknown_field"},
		{"refund-like amount key", validIntent(`"amount_received":1`), "amount_received", "unknown_field"},
		{"duplicate", `{"amount":1,"amount":2}`, "amount", "duplicate_field"},
		// amount
		{"amount missing", `{}`, "amount", "missing_amount"},
		{"amount null is absent", `{"amount":null}`, "amount", "missing_amount"},
		{"amount string", `{"amount":"100"}`, "amount", "invalid_amount"},
		{"amount zero", `{"amount":0}`, "amount", "invalid_amount"},
		{"amount negative", `{"amount":-5}`, "amount", "invalid_amount"},
		{"amount too large", `{"amount":1000000001}`, "amount", "invalid_amount"},
		{"amount fraction", `{"amount":10.5}`, "amount", "invalid_amount"},
		{"amount exponent", `{"amount":1e3}`, "amount", "invalid_amount"},
		{"amount leading zero", `{"amount":0100}`, "", "invalid_json"},
		{"amount overflow", `{"amount":99999999999999999999}`, "amount", "invalid_amount"},
		{"amount bool", `{"amount":true}`, "amount", "invalid_amount"},
		{"amount before currency", `{"amount":0,"currency":"JPY"}`, "amount", "invalid_amount"},
		// currency
		{"currency missing", `{"amount":1}`, "currency", "missing_currency"},
		{"currency number", `{"amount":1,"currency":978}`, "currency", "invalid_currency"},
		{"currency unknown", `{"amount":1,"currency":"ABC"}`, "currency", "invalid_currency"},
		{"currency malformed", `{"amount":1,"currency":"EURO"}`, "currency", "invalid_currency"},
		{"currency metal", `{"amount":1,"currency":"XAU"}`, "currency", "invalid_currency"},
		{"currency without two decimals", `{"amount":1,"currency":"JPY"}`, "currency", "currency_not_supported"},
		{"currency with three decimals", `{"amount":1,"currency":"kwd"}`, "currency", "currency_not_supported"},
		{"currency of another store", `{"amount":1,"currency":"USD"}`, "currency", "currency_mismatch"},
		{"currency before customer", `{"amount":1,"currency":"USD","customer":5}`, "currency", "currency_mismatch"},
		// customer
		{"customer missing", `{"amount":1,"currency":"eur"}`, "customer", "missing_customer"},
		{"customer string", `{"amount":1,"currency":"EUR","customer":"cus_1"}`, "customer", "invalid_customer"},
		{"customer array", `{"amount":1,"currency":"EUR","customer":[]}`, "customer", "invalid_customer"},
		{"customer unknown key first", cust(`"id":5,"address":"x"`), "customer.address", "unknown_field"},
		{"customer duplicate key", cust(`"id":"a","id":"b"`), "customer.id", "duplicate_field"},
		{"customer id missing", cust(``), "customer.id", "missing_id"},
		{"customer id type", cust(`"id":5`), "customer.id", "invalid_id"},
		{"customer id too long", cust(`"id":"` + strings.Repeat("c", 65) + `"`), "customer.id", "invalid_id"},
		{"customer id not printable", cust(`"id":"c\u0000"`), "customer.id", "invalid_id"},
		{"customer name missing", cust(`"id":"c"`), "customer.name", "missing_name"},
		{"customer name control", cust(`"id":"c","name":"a\nb"`), "customer.name", "invalid_name"},
		{"customer email missing", cust(`"id":"c","name":"n"`), "customer.email", "missing_email"},
		{"customer email", cust(`"id":"c","name":"n","email":"Jane <j@example.com>"`), "customer.email", "invalid_email"},
		{"customer phone missing", cust(`"id":"c","name":"n","email":"j@example.com"`), "customer.phone", "missing_phone"},
		{"customer phone", cust(`"id":"c","name":"n","email":"j@example.com","phone":"0151 123"`), "customer.phone", "invalid_phone"},
		// description, reference, metadata
		{"description type", validIntent(`"description":5`), "description", "invalid_description"},
		{"description too long", validIntent(`"description":"` + strings.Repeat("d", 1001) + `"`), "description", "invalid_description"},
		{"description control", validIntent(`"description":"a\tb"`), "description", "invalid_description"},
		{"description before reference", validIntent(`"reference":"","description":5`), "description", "invalid_description"},
		{"reference empty", validIntent(`"reference":""`), "reference", "invalid_reference"},
		{"reference too long", validIntent(`"reference":"` + strings.Repeat("r", 101) + `"`), "reference", "invalid_reference"},
		{"reference zero width", validIntent(`"reference":"a\u200bb"`), "reference", "invalid_reference"},
		{"metadata type", validIntent(`"metadata":["a"]`), "metadata", "invalid_metadata"},
		{"metadata value type", validIntent(`"metadata":{"k":1}`), "metadata", "invalid_metadata"},
		{"metadata null value", validIntent(`"metadata":{"k":null}`), "metadata", "invalid_metadata"},
		{"metadata bracket key", validIntent(`"metadata":{"a[b]":"v"}`), "metadata", "invalid_metadata"},
		{"metadata long value", validIntent(`"metadata":{"k":"` + strings.Repeat("v", 501) + `"}`), "metadata", "invalid_metadata"},
		{"metadata too many keys", validIntent(`"metadata":` + string(many)), "metadata", "invalid_metadata"},
		{"metadata duplicate key", validIntent(`"metadata":{"k":"a","k":"b"}`), "metadata", "invalid_metadata"},
		// billing
		{"billing type", validIntent(`"billing":"DE"`), "billing", "invalid_billing"},
		{"billing unknown key", validIntent(`"billing":{"country":"DE","street":"x"}`), "billing.street", "unknown_field"},
		{"billing country missing", validIntent(`"billing":{"postal_code":"10115"}`), "billing.country", "missing_country"},
		{"billing country", validIntent(`"billing":{"country":"UK"}`), "billing.country", "invalid_country"},
		{"billing state", validIntent(`"billing":{"country":"DE","state":""}`), "billing.state", "invalid_state"},
		{"billing postal code", validIntent(`"billing":{"country":"DE","postal_code":"-10115"}`), "billing.postal_code", "invalid_postal_code"},
		{"metadata before billing", validIntent(`"billing":5,"metadata":5`), "metadata", "invalid_metadata"},
		// page_origins, payment_method
		{"page origins type", validIntent(`"page_origins":"https://shop.example"`), "page_origins", "invalid_page_origins"},
		{"page origins empty", validIntent(`"page_origins":[]`), "page_origins", "invalid_page_origins"},
		{"page origins http", validIntent(`"page_origins":["http://shop.example"]`), "page_origins", "invalid_page_origins"},
		{"page origins path", validIntent(`"page_origins":["https://shop.example/pay"]`), "page_origins", "invalid_page_origins"},
		{"page origins element", validIntent(`"page_origins":[5]`), "page_origins", "invalid_page_origins"},
		{"billing before page origins", validIntent(`"page_origins":5,"billing":5`), "billing", "invalid_billing"},
		{"payment method type", validIntent(`"payment_method":5`), "payment_method", "invalid_payment_method"},
		{"payment method not a card", validIntent(`"payment_method":"pm_123"`), "payment_method", "invalid_payment_method"},
		{"page origins before payment method", validIntent(`"payment_method":5,"page_origins":5`), "page_origins", "invalid_page_origins"},
	}
	for _, tc := range tests {
		r := b.do(t, req{method: "POST", path: "/v1/payment_intents", key: s.sk, body: tc.body})
		t.Run(tc.name, func(t *testing.T) {
			requireInvalid(t, r, tc.field, tc.code)
		})
	}
	// Nothing was created.
	list := b.do(t, req{method: "GET", path: "/v1/payment_intents", key: s.sk})
	require.Empty(t, list.Body["data"])

	// The limits themselves are accepted.
	for _, body := range []string{
		`{"amount":1,"currency":"eur","customer":` + validCustomer + `}`,
		`{"amount":1000000000,"currency":"EUR","customer":` + validCustomer + `,"description":null,"reference":null,"metadata":null}`,
		validIntent(`"description":"","reference":"` + strings.Repeat("r", 100) + `","metadata":{},"billing":{"country":"de"},"page_origins":["https://a.example","http://localhost:3000"]`),
	} {
		r := b.do(t, req{method: "POST", path: "/v1/payment_intents", key: s.sk, body: body})
		require.Equal(t, http.StatusCreated, r.Status, "%s: %s", body, r.Raw)
		require.Equal(t, "EUR", r.str("currency"))
	}
	requireError(t, b.do(t, req{method: "POST", path: "/v1/payment_intents", key: s.sk,
		body: validIntent(`"payment_method":"card_AAAAAAAAAAAAAAAAAAAAAAAA"`)}), http.StatusNotFound, "card_not_found")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/payment_intents", key: s.pk, body: validIntent("")}),
		http.StatusUnauthorized, "invalid_api_key")
}

func TestCardSessionValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	session := func(extra string) string {
		return `{"customer":` + validCustomer + extra + `}`
	}
	for _, tc := range []struct{ body, field, code string }{
		{`{"page_origins":["https://a.example"],"zz":1}`, "zz", "unknown_field"},
		{`{"page_origins":["https://a.example"]}`, "customer", "missing_customer"},
		{`{"customer":true}`, "customer", "invalid_customer"},
		{`{"customer":{"id":"c","name":"n","email":"e@example.com","phone":"+49151","x":1}}`, "customer.x", "unknown_field"},
		{`{"customer":{"name":"n"}}`, "customer.id", "missing_id"},
		{`{"customer":{"id":"c","name":"n","email":"nope","phone":"+49151"}}`, "customer.email", "invalid_email"},
		{session(``), "page_origins", "invalid_page_origins"},
		{session(`,"page_origins":[]`), "page_origins", "invalid_page_origins"},
		{session(`,"page_origins":["https://a.example","https://A.example:443"]`), "page_origins", "invalid_page_origins"},
		{session(`,"page_origins":["https://1.example","https://2.example","https://3.example","https://4.example","https://5.example","https://6.example","https://7.example","https://8.example","https://9.example","https://10.example","https://11.example"]`), "page_origins", "invalid_page_origins"},
	} {
		r := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: tc.body})
		requireInvalid(t, r, tc.field, tc.code)
	}
	requireError(t, b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.pk, body: session(`,"page_origins":["https://a.example"]`)}),
		http.StatusUnauthorized, "invalid_api_key")
}

// TestCaptureValidation covers the card fields of a capture; the same
// decoder serves a confirm from the card field (TestConfirmValidation).
func TestCaptureValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	session := b.session(t, s)
	secret := session.str("client_secret")
	card := func(fields string) string { return `{"client_secret":"` + secret + `",` + fields + `}` }
	const visa = `"number":"4242424242424242"`
	for _, tc := range []struct{ body, field, code string }{
		{`{"client_secret":"x","cvc":"1","pan":"4242"}`, "pan", "unknown_field"},
		{`{"number":"4242424242424242"}`, "client_secret", "missing_client_secret"},
		{`{"client_secret":5}`, "client_secret", "invalid_client_secret"},
		{card(`"exp_month":1`), "number", "missing_number"},
		{card(`"number":4242424242424242`), "number", "invalid_number"},
		{card(`"number":"4242424242424241"`), "number", "invalid_number"},
		{card(`"number":"4242-4242 4242  4242"`), "number", "invalid_number"},
		{card(`"number":"42424242424"`), "number", "invalid_number"},
		{card(visa), "exp_month", "missing_exp_month"},
		{card(visa + `,"exp_month":"12"`), "exp_month", "invalid_expiry"},
		{card(visa + `,"exp_month":13,"exp_year":"x"`), "exp_month", "invalid_expiry"},
		{card(visa + `,"exp_month":0`), "exp_month", "invalid_expiry"},
		{card(visa + `,"exp_month":12`), "exp_year", "missing_exp_year"},
		{card(visa + `,"exp_month":12,"exp_year":30`), "exp_year", "invalid_expiry"},
		{card(visa + `,"exp_month":12,"exp_year":2025`), "exp_year", "invalid_expiry"},
		{card(visa + `,"exp_month":12,"exp_year":2047`), "exp_year", "invalid_expiry"},
		{card(visa + `,"exp_month":10,"exp_year":2026`), "exp_month", "invalid_expiry"},
		{card(visa + `,"exp_month":12,"exp_year":2030`), "cvc", "missing_cvc"},
		{card(visa + `,"exp_month":12,"exp_year":2030,"cvc":123`), "cvc", "invalid_cvc"},
		{card(visa + `,"exp_month":12,"exp_year":2030,"cvc":"1234"`), "cvc", "invalid_cvc"},
		{card(`"number":"378282246310005","exp_month":12,"exp_year":2030,"cvc":"123"`), "cvc", "invalid_cvc"},
		{card(visa + `,"exp_month":12,"exp_year":2030,"cvc":"123","name":""`), "name", "invalid_name"},
		{card(visa + `,"exp_month":12,"exp_year":2030,"cvc":"123","name":["x"]`), "name", "invalid_name"},
	} {
		r := b.do(t, req{method: "POST", path: "/v1/card_sessions/" + session.str("id") + "/cards", key: s.pk, body: tc.body})
		requireInvalid(t, r, tc.field, tc.code)
	}
	require.Equal(t, "open", b.do(t, req{method: "GET", path: "/v1/card_sessions/" + session.str("id"), key: s.sk}).str("status"))

	// The secret key cannot capture: the browser does, with the session's
	// client_secret.
	r := b.do(t, req{method: "POST", path: "/v1/card_sessions/" + session.str("id") + "/cards", key: s.sk,
		body: card(visa + `,"exp_month":12,"exp_year":2030,"cvc":"123"`)})
	requireError(t, r, http.StatusUnauthorized, "invalid_api_key")
	r = b.do(t, req{method: "POST", path: "/v1/card_sessions/" + session.str("id") + "/cards", key: s.pk,
		body: `{"client_secret":"` + secret + `x",` + visa + `,"exp_month":12,"exp_year":2030,"cvc":"123"}`})
	requireError(t, r, http.StatusNotFound, "card_session_not_found")

	// An amex with four digits, the month that is still running, and
	// separators: accepted.
	r = b.do(t, req{method: "POST", path: "/v1/card_sessions/" + session.str("id") + "/cards", key: s.pk,
		body: card(`"number":"3782 822463 10005","exp_month":11,"exp_year":2026,"cvc":"1234"`)})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.Equal(t, "amex", r.str("brand"))
	require.Equal(t, "0005", r.str("last4"))
}

func TestConfirmValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 100))
	id := pi(t, intent)
	secret := intent.str("client_secret")
	path := "/v1/payment_intents/" + id + "/confirm"
	browser := func(fields string) string {
		return `{"client_secret":"` + secret + `","number":"4242424242424242","exp_month":12,"exp_year":2030,"cvc":"123"` + fields + `}`
	}
	for _, tc := range []struct{ key, body, field, code string }{
		// The browser: client_secret, the card, billing.
		{s.pk, browser(`,"payment_method":"card_AAAAAAAAAAAAAAAAAAAAAAAA"`), "payment_method", "invalid_payment_method"},
		{s.pk, `{}`, "client_secret", "missing_client_secret"},
		{s.pk, ``, "client_secret", "missing_client_secret"},
		{s.pk, `{"client_secret":"` + secret + `","number":"1"}`, "number", "invalid_number"},
		{s.pk, browser(`,"billing":{"country":"XX"}`), "billing.country", "invalid_country"},
		{s.pk, browser(`,"billing":[]`), "billing", "invalid_billing"},
		// The store's server: payment_method, billing.
		{s.sk, browser(``), "client_secret", "unknown_field"},
		{s.sk, `{"number":"4242424242424242"}`, "number", "unknown_field"},
		{s.sk, `{"payment_method":"pm_1"}`, "payment_method", "invalid_payment_method"},
		{s.sk, `{"payment_method":"card_AAAAAAAAAAAAAAAAAAAAAAAA","billing":{"state":"x"}}`, "billing.country", "missing_country"},
	} {
		r := b.do(t, req{method: "POST", path: path, key: tc.key, body: tc.body})
		requireInvalid(t, r, tc.field, tc.code)
	}
	// A wrong client_secret is the same as no such intent.
	wrong := secret[:len(secret)-1] + map[bool]string{true: "A", false: "B"}[secret[len(secret)-1] != 'A']
	r := b.do(t, req{method: "POST", path: path, key: s.pk, body: strings.Replace(browser(""), secret, wrong, 1)})
	requireError(t, r, http.StatusNotFound, "payment_intent_not_found")
	r = b.do(t, req{method: "POST", path: path, key: s.pk, body: strings.Replace(browser(""), secret, "pi_other_secret_x", 1)})
	requireError(t, r, http.StatusNotFound, "payment_intent_not_found")

	// card_not_found: unknown, or another customer's card.
	requireError(t, b.confirmSaved(t, s, id, "card_AAAAAAAAAAAAAAAAAAAAAAAA"), http.StatusNotFound, "card_not_found")
	sess := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer":     map[string]any{"id": "cus_other", "name": "Other", "email": "o@example.com", "phone": "+4915100000000"},
		"page_origins": []string{"https://shop.example"},
	}})
	require.Equal(t, http.StatusCreated, sess.Status)
	captured := b.capture(t, s, sess, "4242424242424242")
	require.Equal(t, http.StatusCreated, captured.Status, "%s", captured.Raw)
	requireError(t, b.confirmSaved(t, s, id, captured.str("id")), http.StatusNotFound, "card_not_found")

	require.Equal(t, "requires_payment_method", b.getIntent(t, s, id).str("status"), "no refused confirm recorded an attempt")
	require.Zero(t, b.sandbox.Charges())
}
