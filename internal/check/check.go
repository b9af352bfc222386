// Package check judges the fields of API requests, one function per field,
// for the services' Validate methods: the one place where a request's
// values are judged, whether it came as JSON or as Go values.
package check

import (
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/fields"
	"github.com/keelpay/keelpay/internal/wire"
)

// The functions judge one request field each and return nil or a 400
// invalid_request naming the field (details.field, details.code). A
// Validate method calls them through Fields in the documented order, so
// that the first failure in that order is the one reported, including a
// wrong JSON type found by the decoder. Messages name fields, never
// values. An empty string counts as missing.

// Fields runs the rules of a request's fields in order and keeps the first
// failure. A request decoded from JSON brings its wire.Form: a field that
// failed to decode fails in its place, and a field sent empty is judged
// (an empty reference is invalid), where the same empty field given as a Go
// value is absent.
type Fields struct {
	form *wire.Form
	err  error
}

// In starts the checks of a request decoded into form (nil: given as Go
// values).
func In(form *wire.Form) *Fields { return &Fields{form: form} }

// Present reports whether the request's body had the top-level key name,
// not null (false for a request given as Go values); see wire.Form.Present.
func (v *Fields) Present(name string) bool { return v.form.Present(name) }

// Err returns the first failure, or nil. A shape failure whose place no
// rule visited is still reported.
func (v *Fields) Err() error {
	if v.err == nil {
		return v.form.Err()
	}
	return v.err
}

// Required judges field name with rule (nil: only its shape), also when it
// is zero: a required field's rule treats empty as missing.
func (v *Fields) Required(name string, rule func() error) {
	if v.err != nil {
		return
	}
	if v.err = v.form.ErrAt(name); v.err == nil && rule != nil {
		v.err = rule()
	}
}

// Optional judges field name with rule unless it is absent: zero, and not
// sent empty in JSON.
func (v *Fields) Optional(name string, zero bool, rule func() error) {
	if v.err != nil {
		return
	}
	if v.err = v.form.ErrAt(name); v.err == nil && (!zero || v.form.Sent(name)) {
		v.err = rule()
	}
}

// Object judges an object field's own shape and reports whether its
// fields are to be judged: not when it is absent (zero and not sent), when
// an absent required object is missing_<name>.
func (v *Fields) Object(name string, zero, required bool) bool {
	if v.err != nil {
		return false
	}
	if v.err = v.form.ErrAt(name); v.err != nil {
		return false
	}
	if zero && !v.form.Sent(name) {
		if required {
			v.err = missing(name)
		}
		return false
	}
	return true
}

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

// ProviderPaymentMethod checks payment_method as a reference that the
// provider's own browser element made (Stripe's pm_...): 1 to 255 letters,
// digits and underscores, else invalid_payment_method.
func ProviderPaymentMethod(s string) error {
	if !providerReference(s) {
		return invalid("payment_method", "invalid_payment_method",
			"payment_method must be the reference of a card that the provider's element captured.")
	}
	return nil
}

func providerReference(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
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

// CardExpYear checks exp_year of a card whose exp_month passed
// CardExpMonth, and the expiry as a whole at now: a four-digit year at most
// 20 years ahead, not before the end of the month (exp_month is blamed when
// only the month of the current year has passed).
func CardExpYear(month, year int64, now time.Time) error {
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
		} else if fields.WebhookURL(s, true) {
			// An http URL or a loopback, private or single-label host: fine
			// for trying keelpay out on one machine, once allowed.
			msg += " A local receiver (http, localhost or a private address) is accepted only with insecure webhooks allowed: " +
				"service.Config.AllowInsecureWebhooks, or the reference server in sandbox mode (-provider sandbox, its default)."
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
