// Package check judges the fields of API requests, one function per field,
// for the HTTP decoders and the services' Validate methods.
package check

import (
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/fields"
)

// The functions judge one request field each and return nil or a 400
// invalid_request naming the field (details.field, details.code). The HTTP
// decoder calls them field by field, so that the first failure in the
// decided order is the one reported, including a wrong JSON type; the
// Validate methods of the params call the same functions in the same order.
// Messages name fields, never values. An empty string counts as missing.

func invalid(field, code, msg string) error { return keelpay.InvalidRequest(field, code, msg) }

func missing(field string) error {
	return keelpay.InvalidRequest(field, "missing_"+lastSegment(field), field+" is required.")
}

func lastSegment(field string) string {
	for i := len(field) - 1; i >= 0; i-- {
		if field[i] == '.' {
			return field[i+1:]
		}
	}
	return field
}

// Amount checks an intent's amount in minor units: 1 to 1000000000.
func Amount(n int64) error {
	if !fields.Amount(n) {
		return invalid("amount", "invalid_amount", "amount must be an integer from 1 to 1000000000 (minor units).")
	}
	return nil
}

// Currency checks a currency code against the store's currency and
// returns it upper case: invalid_currency, then currency_not_supported (not
// two decimal places), then currency_mismatch.
func Currency(code, storeCurrency string) (string, error) {
	if code == "" {
		return "", missing("currency")
	}
	upper, detail := fields.Currency(code)
	switch {
	case detail == fields.DetailInvalidCurrency:
		return "", invalid("currency", detail, "currency must be an ISO 4217 currency code.")
	case detail == fields.DetailCurrencyNotSupported:
		return "", invalid("currency", detail, "currency must have two decimal places.")
	case upper != storeCurrency:
		return "", invalid("currency", "currency_mismatch", "currency must be the store's currency.")
	}
	return upper, nil
}

// CustomerID checks customer.id: 1 to 64 printable characters.
func CustomerID(s string) error {
	return check(s, "customer.id", fields.CustomerID, "customer.id must be 1 to 64 printable characters.")
}

// CustomerName checks customer.name: 1 to 200 characters without
// control characters.
func CustomerName(s string) error {
	return check(s, "customer.name", fields.Name, "customer.name must be 1 to 200 characters without control characters.")
}

// CustomerEmail checks customer.email: a plain address.
func CustomerEmail(s string) error {
	return check(s, "customer.email", fields.Email, "customer.email must be a plain e-mail address of at most 254 characters.")
}

// CustomerPhone checks customer.phone: E.164.
func CustomerPhone(s string) error {
	return check(s, "customer.phone", fields.Phone, "customer.phone must be an E.164 number such as +4915112345678.")
}

// Customer checks all four customer fields, in order; a customer with
// no field set is missing_customer.
func Customer(c keelpay.Customer) error {
	if c == (keelpay.Customer{}) {
		return missing("customer")
	}
	for _, err := range []error{CustomerID(c.ID), CustomerName(c.Name), CustomerEmail(c.Email), CustomerPhone(c.Phone)} {
		if err != nil {
			return err
		}
	}
	return nil
}

func check(s, field string, ok func(string) bool, msg string) error {
	if s == "" {
		return missing(field)
	}
	if !ok(s) {
		return invalid(field, "invalid_"+lastSegment(field), msg)
	}
	return nil
}

// Description checks an intent's description: at most 1000 characters
// without control characters.
func Description(s string) error {
	if !fields.Description(s) {
		return invalid("description", "invalid_description", "description must be at most 1000 characters without control characters.")
	}
	return nil
}

// Reference checks an intent's reference: 1 to 100 printable
// characters.
func Reference(s string) error {
	if !fields.Reference(s) {
		return invalid("reference", "invalid_reference", "reference must be 1 to 100 printable characters.")
	}
	return nil
}

// InvalidMetadata is the error of metadata that is not an object of at
// most 50 string values with keys of 1 to 40 characters without brackets
// and values of at most 500.
func InvalidMetadata() error {
	return invalid("metadata", "invalid_metadata",
		"metadata must be an object of at most 50 string values; keys 1 to 40 characters without [ or ], values at most 500.")
}

// Metadata checks an intent's metadata.
func Metadata(m map[string]string) error {
	if !fields.Metadata(m) {
		return InvalidMetadata()
	}
	return nil
}

// InvalidBilling is the error of billing that is not an object.
func InvalidBilling() error {
	return invalid("billing", "invalid_billing", "billing must be an object with country, state and postal_code.")
}

// BillingCountry checks billing.country (required when billing is
// given): an ISO 3166-1 alpha-2 code, returned upper case.
func BillingCountry(s string) (string, error) {
	if s == "" {
		return "", missing("billing.country")
	}
	code, ok := fields.CountryCode(s)
	if !ok {
		return "", invalid("billing.country", "invalid_country", "billing.country must be an ISO 3166-1 alpha-2 country code.")
	}
	return code, nil
}

// BillingState checks billing.state: 1 to 50 characters without
// control characters.
func BillingState(s string) error {
	if !fields.State(s) {
		return invalid("billing.state", "invalid_state", "billing.state must be 1 to 50 characters without control characters.")
	}
	return nil
}

// BillingPostalCode checks billing.postal_code: 1 to 16 letters,
// digits, spaces and hyphens.
func BillingPostalCode(s string) error {
	if !fields.PostalCode(s) {
		return invalid("billing.postal_code", "invalid_postal_code", "billing.postal_code must be 1 to 16 letters, digits, spaces and hyphens.")
	}
	return nil
}

// Billing checks billing details in order and returns them with the
// country upper case; nil is no billing.
func Billing(b *keelpay.Billing) (*keelpay.Billing, error) {
	if b == nil {
		return nil, nil
	}
	out := *b
	var err error
	if out.Country, err = BillingCountry(b.Country); err != nil {
		return nil, err
	}
	if b.State != "" {
		if err := BillingState(b.State); err != nil {
			return nil, err
		}
	}
	if b.PostalCode != "" {
		if err := BillingPostalCode(b.PostalCode); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// InvalidPageOrigins is the error of page_origins that are not 1 to 10
// distinct origins.
func InvalidPageOrigins() error {
	return invalid("page_origins", "invalid_page_origins",
		"page_origins must be 1 to 10 distinct origins scheme://host[:port] (https, or http for localhost), without a path.")
}

// PageOrigins checks page_origins and returns them canonical.
func PageOrigins(list []string) ([]string, error) {
	out, ok := fields.PageOrigins(list)
	if !ok {
		return nil, InvalidPageOrigins()
	}
	return out, nil
}

// PaymentMethod checks payment_method: a card id.
func PaymentMethod(s string) error {
	if !keelpay.ValidID(keelpay.PrefixCard, s) {
		return invalid("payment_method", "invalid_payment_method", "payment_method must be a card id.")
	}
	return nil
}

// CancellationReason checks a client's cancellation_reason:
// requested_by_customer, abandoned, duplicate or fraudulent.
func CancellationReason(s string) error {
	if !fields.CancellationReason(s) {
		return invalid("cancellation_reason", "invalid_cancellation_reason",
			"cancellation_reason must be requested_by_customer, abandoned, duplicate or fraudulent.")
	}
	return nil
}

// ClientSecret checks that a client_secret is given; whether it is
// the object's is decided when the object is read (a wrong one is not
// found).
func ClientSecret(s string) error {
	if s == "" {
		return missing("client_secret")
	}
	return nil
}

// CardNumber checks a card number as typed (digits, with single
// spaces or hyphens between them) and returns its digits: Luhn, 12 to 19
// digits, else invalid_number.
func CardNumber(s string) (string, error) {
	if s == "" {
		return "", missing("number")
	}
	digits, ok := fields.CardNumber(s)
	if !ok {
		return "", invalid("number", "invalid_number", "number is not a valid card number.")
	}
	return digits, nil
}

// InvalidExpiry is the invalid_expiry error of field exp_month or
// exp_year.
func InvalidExpiry(field string) error {
	return invalid(field, "invalid_expiry", "The card's expiry (exp_month, exp_year) is not valid or has passed.")
}

// CardExpMonth checks exp_month: 1 to 12.
func CardExpMonth(month int64) error {
	if month < 1 || month > 12 {
		return InvalidExpiry("exp_month")
	}
	return nil
}

// CardExpiry checks exp_year, and the expiry as a whole at now: a
// four-digit year at most 20 years ahead, not before the end of the month
// (exp_month is blamed when only the month of the current year has
// passed).
func CardExpiry(month, year int64, now time.Time) error {
	if err := CardExpMonth(month); err != nil {
		return err
	}
	if year < 1000 || year > 9999 || year < int64(now.UTC().Year()) {
		return InvalidExpiry("exp_year")
	}
	if !fields.Expiry(int(month), int(year), now) {
		if year == int64(now.UTC().Year()) {
			return InvalidExpiry("exp_month")
		}
		return InvalidExpiry("exp_year")
	}
	return nil
}

// CardCVC checks a CVC for the brand of the card number's digits: 3
// digits, 4 for amex.
func CardCVC(cvc, digits string) error {
	if cvc == "" {
		return missing("cvc")
	}
	if !fields.CVC(cvc, fields.Brand(digits)) {
		return invalid("cvc", "invalid_cvc", "cvc is not a valid security code for this card.")
	}
	return nil
}

// CardName checks the optional cardholder name: 1 to 200 characters
// without control characters.
func CardName(s string) error {
	if !fields.Name(s) {
		return invalid("name", "invalid_name", "name must be 1 to 200 characters without control characters.")
	}
	return nil
}

// InvalidCursor is the 400 of a list cursor (starting_after or
// ending_before) that is not the id of an object of the list.
func InvalidCursor(field string) error {
	return keelpay.InvalidRequest(field, "invalid_"+field, field+" must be the id of a payment intent of the store.")
}

// ClientID checks a client id: 1 to 255 printable ASCII characters.
func ClientID(s string) error {
	if s == "" {
		return keelpay.InvalidRequest("client_id", "missing_client_id", "client_id is required.")
	}
	if !printableASCII(s, 255) {
		return keelpay.InvalidRequest("client_id", "invalid_client_id", "client_id must be 1 to 255 printable ASCII characters.")
	}
	return nil
}

// AppClientSecret checks the client secret of a provider application: 1 to 255 printable ASCII
// characters.
func AppClientSecret(s string) error {
	if s == "" {
		return keelpay.InvalidRequest("client_secret", "missing_client_secret", "client_secret is required.")
	}
	if !printableASCII(s, 255) {
		return keelpay.InvalidRequest("client_secret", "invalid_client_secret", "client_secret must be 1 to 255 printable ASCII characters.")
	}
	return nil
}

// WebhookURL checks a webhook URL .
func WebhookURL(s string, allowInsecure bool) error {
	if s == "" {
		return keelpay.InvalidRequest("webhook_url", "missing_webhook_url", "webhook_url is required.")
	}
	if !fields.WebhookURL(s, allowInsecure) {
		msg := "webhook_url must be an absolute https URL of at most 2048 characters, without user info or fragment, to a public host."
		if allowInsecure {
			msg = "webhook_url must be an absolute http or https URL of at most 2048 characters, without user info or fragment."
		}
		return keelpay.InvalidRequest("webhook_url", "invalid_webhook_url", msg)
	}
	return nil
}

func printableASCII(s string, maxLen int) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// RefundIntent checks the payment_intent field of a refund: a payment intent id.
func RefundIntent(s string) error {
	if s == "" {
		return keelpay.InvalidRequest("payment_intent", "missing_payment_intent", "payment_intent is required.")
	}
	if !keelpay.ValidID(keelpay.PrefixPaymentIntent, s) {
		return keelpay.InvalidRequest("payment_intent", "invalid_payment_intent", "payment_intent must be a payment intent id.")
	}
	return nil
}

// RefundReason checks the reason of a refund: 1 to 150 characters, no control
// characters.
func RefundReason(s string) error {
	if !fields.Reason(s) {
		return keelpay.InvalidRequest("reason", "invalid_reason", "reason must be 1 to 150 characters without control characters.")
	}
	return nil
}
