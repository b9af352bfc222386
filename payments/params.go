package payments

import (
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/fields"
	"github.com/keelpay/keelpay/internal/wire"
	"github.com/keelpay/keelpay/provider"
)

// CardSessionParams is the request of a card session.
type CardSessionParams struct {
	Customer keelpay.Customer
	// PageOrigins are the origins of the pages that may show the card
	// field (1 to 10).
	PageOrigins []string
	// Idempotency, when set, is the request's idempotency key: the
	// change records its progress on the key and stores its answer with
	// it (see package idempotency). nil: no key.
	Idempotency *idempotency.Key

	// Form is what keelpay's HTTP API learnt from the request's JSON body
	// (the keys it had, a value of the wrong JSON type), for Validate to
	// judge the fields in the documented order. Its type is internal:
	// code outside keelpay cannot obtain one and leaves it nil, and the
	// fields are then judged as Go values, an empty one being absent.
	Form *wire.Form
}

// Validate checks the fields in the decided order (customer, page_origins)
// and makes them canonical.
func (p *CardSessionParams) Validate() error {
	v := check.In(p.Form)
	validateCustomer(v, &p.Customer)
	var origins []string
	v.Required("page_origins", func() (err error) {
		origins, err = check.PageOrigins(p.PageOrigins)
		return err
	})
	if err := v.Err(); err != nil {
		return err
	}
	p.PageOrigins = origins
	return nil
}

// validateCustomer checks the customer and its four fields, in order; a
// customer with no field set is missing_customer.
func validateCustomer(v *check.Fields, c *keelpay.Customer) {
	if !v.Object("customer", *c == (keelpay.Customer{}), true) {
		return
	}
	v.Required("customer.id", func() error { return check.CustomerID(c.ID) })
	v.Required("customer.name", func() error { return check.CustomerName(c.Name) })
	v.Required("customer.email", func() error { return check.CustomerEmail(c.Email) })
	v.Required("customer.phone", func() error { return check.CustomerPhone(c.Phone) })
}

// validateBilling checks billing details in order and returns them with
// the country upper case; nil is no billing.
func validateBilling(v *check.Fields, b *keelpay.Billing) *keelpay.Billing {
	if !v.Object("billing", b == nil, false) || b == nil {
		return nil
	}
	out := *b
	v.Required("billing.country", func() (err error) {
		out.Country, err = check.BillingCountry(b.Country)
		return err
	})
	v.Optional("billing.state", b.State == "", func() error { return check.BillingState(b.State) })
	v.Optional("billing.postal_code", b.PostalCode == "", func() error { return check.BillingPostalCode(b.PostalCode) })
	return &out
}

// NewCard is a new card from the browser: either the reference of a card
// that the provider's own browser element captured (PaymentMethod; the
// number never reached keelpay), or the card as the buyer typed it
// (Number, ExpMonth, ExpYear, CVC, Name). It goes to the provider and is
// never stored or logged.
type NewCard struct {
	// PaymentMethod is the provider's reference (Stripe's pm_...); when
	// set, the other fields are empty.
	PaymentMethod string
	// Number may hold single spaces or hyphens between digits.
	Number   string
	ExpMonth int64
	ExpYear  int64
	CVC      string
	// Name is the cardholder name; optional.
	Name string

	digits string // Number's digits, set by validate
	// reference: the request's body had payment_method (perhaps empty,
	// or not a string), so the card is judged as a reference. Set by
	// validate from the params' Form.
	reference bool
}

// IsReference reports whether the card is a provider's reference rather
// than a typed card.
func (c *NewCard) IsReference() bool { return c.PaymentMethod != "" || c.reference }

// validate checks the card's fields in order at now: payment_method for a
// reference; else number, exp_month, exp_year, cvc, name.
func (c *NewCard) validate(v *check.Fields, now time.Time) {
	if v.Present("payment_method") {
		c.reference = true
	}
	if c.IsReference() {
		v.Required("payment_method", func() error { return check.ProviderPaymentMethod(c.PaymentMethod) })
		return
	}
	var digits string
	v.Required("number", func() (err error) {
		digits, err = check.CardNumber(c.Number)
		return err
	})
	v.Required("exp_month", func() error { return check.CardExpMonth(c.ExpMonth) })
	v.Required("exp_year", func() error { return check.CardExpYear(c.ExpMonth, c.ExpYear, now) })
	v.Required("cvc", func() error { return check.CardCVC(c.CVC, digits) })
	v.Optional("name", c.Name == "", func() error { return check.CardName(c.Name) })
	c.digits = digits
}

// request is the provider's form of the card.
func (c *NewCard) request(merchantID string) provider.SaveCardRequest {
	if c.IsReference() {
		return provider.SaveCardRequest{MerchantID: merchantID, PaymentMethod: c.PaymentMethod}
	}
	return provider.SaveCardRequest{
		MerchantID: merchantID,
		Number:     c.digits,
		ExpMonth:   int(c.ExpMonth),
		ExpYear:    int(c.ExpYear),
		CVC:        c.CVC,
		Name:       c.Name,
	}
}

// method is the card as an intent shows it while it is charged: from the
// typed number, or nil for a reference, whose brand, last4 and expiry
// only the provider's answer tells.
func (c *NewCard) method() *keelpay.PaymentMethod {
	if c.IsReference() {
		return nil
	}
	return &keelpay.PaymentMethod{
		Brand: fields.Brand(c.digits), Last4: c.digits[len(c.digits)-4:],
		ExpMonth: int(c.ExpMonth), ExpYear: int(c.ExpYear),
	}
}

// CaptureParams is the browser's capture of a card into a card session.
type CaptureParams struct {
	// ClientSecret is the card session's client_secret.
	ClientSecret string
	Card         NewCard

	// Form is what keelpay's HTTP API learnt from the request's JSON body
	// (the keys it had, a value of the wrong JSON type), for Validate to
	// judge the fields in the documented order. Its type is internal:
	// code outside keelpay cannot obtain one and leaves it nil, and the
	// fields are then judged as Go values, an empty one being absent.
	Form *wire.Form
}

// Validate checks the fields in the decided order (client_secret, then
// payment_method, or number, exp_month, exp_year, cvc, name) at now.
func (p *CaptureParams) Validate(now time.Time) error {
	v := check.In(p.Form)
	v.Required("client_secret", func() error { return check.ClientSecret(p.ClientSecret) })
	p.Card.validate(v, now)
	return v.Err()
}

// IntentParams is the request of a payment intent (docs/api.md).
type IntentParams struct {
	// Amount is in minor units.
	Amount int64
	// Currency must be the store's currency; either case.
	Currency    string
	Customer    keelpay.Customer
	Description string
	Reference   string
	Metadata    map[string]string
	Billing     *keelpay.Billing
	PageOrigins []string
	// PaymentMethod is a saved card of the customer; optional.
	PaymentMethod string
	// Idempotency, when set, is the request's idempotency key: the
	// change records its progress on the key and stores its answer with
	// it (see package idempotency). nil: no key.
	Idempotency *idempotency.Key

	// Form is what keelpay's HTTP API learnt from the request's JSON body
	// (the keys it had, a value of the wrong JSON type), for Validate to
	// judge the fields in the documented order. Its type is internal:
	// code outside keelpay cannot obtain one and leaves it nil, and the
	// fields are then judged as Go values, an empty one being absent.
	Form *wire.Form
}

// Validate checks the fields in the documented order (docs/api.md) against
// the store's currency and makes them canonical.
func (p *IntentParams) Validate(storeCurrency string) error {
	v := check.In(p.Form)
	v.Required("amount", func() error { return check.Amount(p.Amount) })
	var currency string
	v.Required("currency", func() (err error) {
		currency, err = check.Currency(p.Currency, storeCurrency)
		return err
	})
	validateCustomer(v, &p.Customer)
	v.Optional("description", p.Description == "", func() error { return check.Description(p.Description) })
	v.Optional("reference", p.Reference == "", func() error { return check.Reference(p.Reference) })
	v.Optional("metadata", len(p.Metadata) == 0, func() error { return check.Metadata(p.Metadata) })
	billing := validateBilling(v, p.Billing)
	var origins []string
	v.Optional("page_origins", p.PageOrigins == nil, func() (err error) {
		origins, err = check.PageOrigins(p.PageOrigins)
		return err
	})
	v.Optional("payment_method", p.PaymentMethod == "", func() error { return check.PaymentMethod(p.PaymentMethod) })
	if err := v.Err(); err != nil {
		return err
	}
	p.Currency, p.Billing, p.PageOrigins = currency, billing, origins
	return nil
}

// ConfirmParams is the request of a confirm. With a saved card (the
// store's server, secret key) PaymentMethod names the card, or is empty to
// use the intent's. From the hosted card field (the browser, publishable
// key) ClientSecret is the intent's client_secret, and either Card is the
// new card (typed, or a reference of the provider's element) or
// PaymentMethod a saved card of the intent's customer.
type ConfirmParams struct {
	ClientSecret  string
	Card          *NewCard
	PaymentMethod string
	// Billing replaces the intent's billing details when given.
	Billing *keelpay.Billing
	// Idempotency, when set, is the request's idempotency key: the
	// change records its progress on the key and stores its answer with
	// it (see package idempotency). nil: no key.
	Idempotency *idempotency.Key

	// Form is what keelpay's HTTP API learnt from the request's JSON body
	// (the keys it had, a value of the wrong JSON type), for Validate to
	// judge the fields in the documented order. Its type is internal:
	// code outside keelpay cannot obtain one and leaves it nil, and the
	// fields are then judged as Go values, an empty one being absent.
	Form *wire.Form
}

// Validate checks the fields at now: client_secret and the card, or
// payment_method; then billing.
func (p *ConfirmParams) Validate(now time.Time) error {
	v := check.In(p.Form)
	v.Optional("client_secret", p.Card == nil && p.ClientSecret == "", func() error { return check.ClientSecret(p.ClientSecret) })
	if p.Card != nil {
		p.Card.validate(v, now)
	} else {
		v.Optional("payment_method", p.PaymentMethod == "", func() error { return check.PaymentMethod(p.PaymentMethod) })
	}
	billing := validateBilling(v, p.Billing)
	if err := v.Err(); err != nil {
		return err
	}
	p.Billing = billing
	return nil
}
