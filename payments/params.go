package payments

import (
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/check"
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
}

// Validate checks the fields in the decided order (customer, page_origins)
// and makes them canonical.
func (p *CardSessionParams) Validate() error {
	if err := check.Customer(p.Customer); err != nil {
		return err
	}
	origins, err := check.PageOrigins(p.PageOrigins)
	if err != nil {
		return err
	}
	p.PageOrigins = origins
	return nil
}

// NewCard is a card as the buyer typed it. It goes to the provider and is
// never stored or logged.
type NewCard struct {
	// Number may hold single spaces or hyphens between digits.
	Number   string
	ExpMonth int64
	ExpYear  int64
	CVC      string
	// Name is the cardholder name; optional.
	Name string

	digits string // Number's digits, set by validate
}

// validate checks the card's fields in order at now.
func (c *NewCard) validate(now time.Time) error {
	digits, err := check.CardNumber(c.Number)
	if err != nil {
		return err
	}
	if err := check.CardExpiry(c.ExpMonth, c.ExpYear, now); err != nil {
		return err
	}
	if err := check.CardCVC(c.CVC, digits); err != nil {
		return err
	}
	if c.Name != "" {
		if err := check.CardName(c.Name); err != nil {
			return err
		}
	}
	c.digits = digits
	return nil
}

// request is the provider's form of the card.
func (c *NewCard) request(merchantID string) provider.SaveCardRequest {
	return provider.SaveCardRequest{
		MerchantID: merchantID,
		Number:     c.digits,
		ExpMonth:   int(c.ExpMonth),
		ExpYear:    int(c.ExpYear),
		CVC:        c.CVC,
		Name:       c.Name,
	}
}

// CaptureParams is the browser's capture of a card into a card session.
type CaptureParams struct {
	// ClientSecret is the card session's client_secret.
	ClientSecret string
	Card         NewCard
}

// Validate checks the fields in the decided order (client_secret, number,
// exp_month, exp_year, cvc, name) at now.
func (p *CaptureParams) Validate(now time.Time) error {
	if err := check.ClientSecret(p.ClientSecret); err != nil {
		return err
	}
	return p.Card.validate(now)
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
}

// Validate checks the fields in the documented order (docs/api.md) against the store's
// currency and makes them canonical.
func (p *IntentParams) Validate(storeCurrency string) error {
	if err := check.Amount(p.Amount); err != nil {
		return err
	}
	currency, err := check.Currency(p.Currency, storeCurrency)
	if err != nil {
		return err
	}
	if err := check.Customer(p.Customer); err != nil {
		return err
	}
	if err := check.Description(p.Description); err != nil {
		return err
	}
	if p.Reference != "" {
		if err := check.Reference(p.Reference); err != nil {
			return err
		}
	}
	if err := check.Metadata(p.Metadata); err != nil {
		return err
	}
	billing, err := check.Billing(p.Billing)
	if err != nil {
		return err
	}
	var origins []string
	if p.PageOrigins != nil {
		if origins, err = check.PageOrigins(p.PageOrigins); err != nil {
			return err
		}
	}
	if p.PaymentMethod != "" {
		if err := check.PaymentMethod(p.PaymentMethod); err != nil {
			return err
		}
	}
	p.Currency, p.Billing, p.PageOrigins = currency, billing, origins
	return nil
}

// ConfirmParams is the request of a confirm. With a saved card (the
// store's server, secret key) PaymentMethod names the card, or is empty to
// use the intent's. From the hosted card field (the browser, publishable
// key) ClientSecret is the intent's client_secret, and either Card is the
// new card or PaymentMethod a saved card of the intent's customer.
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
}

// Validate checks the fields at now: client_secret and the card, or
// payment_method; then billing.
func (p *ConfirmParams) Validate(now time.Time) error {
	if p.Card != nil {
		if err := check.ClientSecret(p.ClientSecret); err != nil {
			return err
		}
		if err := p.Card.validate(now); err != nil {
			return err
		}
	} else if p.PaymentMethod != "" {
		if err := check.PaymentMethod(p.PaymentMethod); err != nil {
			return err
		}
	}
	billing, err := check.Billing(p.Billing)
	if err != nil {
		return err
	}
	p.Billing = billing
	return nil
}
