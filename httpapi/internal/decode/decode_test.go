package decode_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi/internal/decode"
	"github.com/keelpay/keelpay/payments"
)

// invalidAt returns details.field and details.code of a 400
// invalid_request, or "" when err is nil.
func invalidAt(t *testing.T, err error) (field, code string) {
	t.Helper()
	if err == nil {
		return "", ""
	}
	var ke *keelpay.Error
	if !errors.As(err, &ke) || ke.Code != keelpay.CodeInvalidRequest {
		t.Fatalf("not invalid_request: %v", err)
	}
	field, _ = ke.Details["field"].(string)
	code, _ = ke.Details["code"].(string)
	return field, code
}

const validCustomer = `"customer":{"id":"cus_1","name":"N","email":"a@b.example","phone":"+4915112345678"}`

// A decoded request is judged by Validate alone, in the documented order,
// whatever the kind of each failure.
func TestIntentOrder(t *testing.T) {
	for _, tc := range []struct {
		body        string
		field, code string
	}{
		{`{"amount":0,"currency":5}`, "amount", "invalid_amount"},
		{`{"amount":1,"currency":5}`, "currency", "invalid_currency"},
		{`{"amount":1,"currency":"usd","customer":7}`, "currency", "currency_mismatch"},
		{`{"amount":1,"currency":"eur","customer":{}}`, "customer.id", "missing_id"},
		{`{"amount":1,"currency":"eur","customer":{"id":"","name":3}}`, "customer.id", "missing_id"},
		{`{"amount":1,"currency":"eur","customer":{"id":"c","name":3}}`, "customer.name", "invalid_name"},
		{`{"amount":1,"currency":"eur","customer":{"x":1,"id":""}}`, "customer.x", "unknown_field"},
		{`{"amount":1,"currency":"eur",` + validCustomer + `,"reference":""}`, "reference", "invalid_reference"},
		{`{"amount":1,"currency":"eur",` + validCustomer + `,"reference":null}`, "", ""},
		{`{"amount":1,"currency":"eur",` + validCustomer + `,"billing":{"country":"de","state":""}}`, "billing.state", "invalid_state"},
		{`{"amount":1,"currency":"eur",` + validCustomer + `,"billing":{"country":"xx","state":1}}`, "billing.country", "invalid_country"},
		{`{"amount":1,"currency":"eur",` + validCustomer + `,"metadata":{"[":"v"},"billing":3}`, "metadata", "invalid_metadata"},
		{`{"amount":1,"currency":"eur",` + validCustomer + `,"page_origins":[],"payment_method":1}`, "page_origins", "invalid_page_origins"},
		{`{"amount":1,"currency":"eur",` + validCustomer + `,"payment_method":""}`, "payment_method", "invalid_payment_method"},
	} {
		p, err := decode.Intent([]byte(tc.body))
		if err == nil {
			err = p.Validate("EUR")
		}
		if field, code := invalidAt(t, err); field != tc.field || code != tc.code {
			t.Errorf("%s: got %s %s, want %s %s", tc.body, field, code, tc.field, tc.code)
		}
	}
}

// Built in Go, an empty field is an absent one.
func TestIntentParamsEmptyIsAbsent(t *testing.T) {
	p := payments.IntentParams{Amount: 1, Currency: "eur",
		Customer: keelpay.Customer{ID: "cus_1", Name: "N", Email: "a@b.example", Phone: "+4915112345678"},
		Billing:  &keelpay.Billing{Country: "de"}}
	if err := p.Validate("EUR"); err != nil {
		t.Fatal(err)
	}
	if p.Currency != "EUR" || p.Billing.Country != "DE" {
		t.Fatalf("not canonical: %s %s", p.Currency, p.Billing.Country)
	}
	if field, code := invalidAt(t, (&payments.IntentParams{Amount: 1, Currency: "EUR"}).Validate("EUR")); field != "customer" || code != "missing_customer" {
		t.Fatalf("got %s %s", field, code)
	}
}

func TestConfirmOrder(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		body        string
		browser     bool
		field, code string
	}{
		{`{"number":"4242424242424241","exp_month":"x"}`, true, "client_secret", "missing_client_secret"},
		{`{"client_secret":"s","number":"4242424242424241","exp_month":"x"}`, true, "number", "invalid_number"},
		{`{"client_secret":"s","number":"4242424242424242","exp_month":"x"}`, true, "exp_month", "invalid_expiry"},
		{`{"client_secret":"s","number":"4242424242424242","exp_month":10,"exp_year":2026,"cvc":1}`, true, "exp_month", "invalid_expiry"},
		{`{"client_secret":"s","number":"4242424242424242","exp_month":12,"exp_year":2030,"cvc":"123","name":""}`, true, "name", "invalid_name"},
		{`{"client_secret":"s","payment_method":"card_AAAAAAAAAAAAAAAAAAAAAAAA","cvc":"123"}`, true, "payment_method", "invalid_payment_method"},
		{`{"client_secret":"","payment_method":""}`, true, "client_secret", "missing_client_secret"},
		// A reference of the provider's element is a new card, alone.
		{`{"client_secret":"s","payment_method":"pm_1Abc"}`, true, "", ""},
		{`{"client_secret":"s","payment_method":"pm_1Abc","name":"A B"}`, true, "payment_method", "invalid_payment_method"},
		{`{"client_secret":"s","payment_method":"pm-1"}`, true, "payment_method", "invalid_payment_method"},
		{`{"client_secret":"s","payment_method":"card_x"}`, true, "payment_method", "invalid_payment_method"},
		{`{"client_secret":"s","payment_method":"pm_1Abc","billing":{"country":""}}`, true, "billing.country", "missing_country"},
		{`{"payment_method":"pm_1Abc"}`, false, "payment_method", "invalid_payment_method"},
		{`{"payment_method":"","billing":1}`, false, "payment_method", "invalid_payment_method"},
		{`{"billing":{"country":"de","postal_code":""}}`, false, "billing.postal_code", "invalid_postal_code"},
		{``, false, "", ""},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		p, err := decode.Confirm(body, tc.browser)
		if err == nil {
			err = p.Validate(now)
		}
		if field, code := invalidAt(t, err); field != tc.field || code != tc.code {
			t.Errorf("%s: got %s %s, want %s %s", tc.body, field, code, tc.field, tc.code)
		}
	}
}

func TestCaptureEitherForm(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	long := strings.Repeat("a", 256)
	for _, tc := range []struct {
		body        string
		field, code string
		reference   bool
	}{
		{`{"client_secret":"s","payment_method":"pm_1Abc"}`, "", "", true},
		{`{"client_secret":"s","payment_method":"` + long[:255] + `"}`, "", "", true},
		{`{"client_secret":"s","number":"4242424242424242","exp_month":12,"exp_year":2030,"cvc":"123"}`, "", "", false},
		{`{"payment_method":"pm_1Abc"}`, "client_secret", "missing_client_secret", true},
		{`{"client_secret":"s"}`, "number", "missing_number", false},
		{`{"client_secret":"s","payment_method":"pm_1","number":"4242424242424242"}`, "payment_method", "invalid_payment_method", true},
		{`{"client_secret":"s","payment_method":"pm_1","cvc":"123"}`, "payment_method", "invalid_payment_method", true},
		{`{"client_secret":"s","payment_method":""}`, "payment_method", "invalid_payment_method", true},
		{`{"client_secret":"s","payment_method":"` + long + `"}`, "payment_method", "invalid_payment_method", true},
		{`{"client_secret":"s","payment_method":"pm 1"}`, "payment_method", "invalid_payment_method", true},
		{`{"client_secret":"s","payment_method":7}`, "payment_method", "invalid_payment_method", true},
	} {
		p, err := decode.Capture([]byte(tc.body))
		if err == nil {
			err = p.Validate(now)
		}
		if field, code := invalidAt(t, err); field != tc.field || code != tc.code {
			t.Errorf("%s: got %s %s, want %s %s", tc.body, field, code, tc.field, tc.code)
		}
		if p.Card.IsReference() != tc.reference {
			t.Errorf("%s: reference %v", tc.body, p.Card.IsReference())
		}
	}
}
