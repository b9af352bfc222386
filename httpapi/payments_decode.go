package httpapi

import (
	"encoding/json"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/payments"
)

// The decoders of the payment requests. Each field is decoded and judged
// in the decided order (unknown keys first, then the documented fields in
// the documented order, docs/api.md), with the value rules of package payments, so that the
// first failure reported is the first in that order whatever its kind.

// customer decodes the customer object: its own unknown keys (as
// customer.<key>), then id, name, email and phone, all required.
func (f *fields) customer(dst *keelpay.Customer) {
	f.nested("customer", true, func(o *object) error {
		if err := o.checkUnknown("id", "name", "email", "phone"); err != nil {
			return err
		}
		g := o.fields()
		g.str("id", true, &dst.ID, check.CustomerID)
		g.str("name", true, &dst.Name, check.CustomerName)
		g.str("email", true, &dst.Email, check.CustomerEmail)
		g.str("phone", true, &dst.Phone, check.CustomerPhone)
		return g.err
	})
}

// billing decodes the optional billing object: country (required),
// state, postal_code.
func (f *fields) billing(dst **keelpay.Billing) {
	f.nested("billing", false, func(o *object) error {
		if err := o.checkUnknown("country", "state", "postal_code"); err != nil {
			return err
		}
		var b keelpay.Billing
		g := o.fields()
		g.str("country", true, &b.Country, func(s string) (err error) {
			b.Country, err = check.BillingCountry(s)
			return err
		})
		g.str("state", false, &b.State, check.BillingState)
		g.str("postal_code", false, &b.PostalCode, check.BillingPostalCode)
		if g.err == nil {
			*dst = &b
		}
		return g.err
	})
}

// metadata decodes the optional metadata object of string values; anything
// else, duplicate keys included, is invalid_metadata.
func (f *fields) metadata(dst *map[string]string) {
	if f.err != nil {
		return
	}
	raw, ok := f.raw("metadata")
	if !ok {
		return
	}
	if raw[0] != '{' {
		f.err = check.InvalidMetadata()
		return
	}
	o, err := parseObject(raw, "metadata.")
	if err != nil {
		f.err = check.InvalidMetadata()
		return
	}
	m := make(map[string]string, len(o.keys))
	for _, k := range o.keys {
		var v string
		if raw := o.vals[k]; raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
			f.err = check.InvalidMetadata()
			return
		}
		m[k] = v
	}
	f.check(check.Metadata(m))
	if f.err == nil && len(m) > 0 {
		*dst = m
	}
}

// pageOrigins decodes page_origins, an array of origins. A missing one,
// where it is required, is invalid_page_origins too (docs/errors.md has no
// missing_ code for it).
func (f *fields) pageOrigins(required bool, dst *[]string) {
	if f.err != nil {
		return
	}
	raw, ok := f.raw("page_origins")
	if !ok {
		if required {
			f.err = check.InvalidPageOrigins()
		}
		return
	}
	var list []string
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		f.err = check.InvalidPageOrigins()
		return
	}
	origins, err := check.PageOrigins(list)
	f.check(err)
	*dst = origins
}

// card decodes a new card's flat fields at now: number, exp_month,
// exp_year, cvc, name (the cardholder name, optional).
func (f *fields) card(dst *payments.NewCard, now time.Time) {
	var digits string
	f.str("number", true, &dst.Number, func(s string) (err error) {
		digits, err = check.CardNumber(s)
		return err
	})
	f.expiry("exp_month", &dst.ExpMonth, check.CardExpMonth)
	f.expiry("exp_year", &dst.ExpYear, func(year int64) error { return check.CardExpiry(dst.ExpMonth, year, now) })
	f.str("cvc", true, &dst.CVC, func(s string) error { return check.CardCVC(s, digits) })
	f.str("name", false, &dst.Name, check.CardName)
}

// savedCardOnly fails a confirm that names a saved card (payment_method)
// and also carries a new card's fields: it is one or the other.
func (f *fields) savedCardOnly() {
	if f.err != nil {
		return
	}
	for _, name := range []string{"number", "exp_month", "exp_year", "cvc", "name"} {
		if _, ok := f.raw(name); ok {
			f.err = keelpay.InvalidRequest("payment_method", "invalid_payment_method",
				"Give either payment_method or a new card's fields, not both.")
			return
		}
	}
}

// expiry decodes exp_month or exp_year: required integers whose every
// failure but absence is invalid_expiry (docs/api.md, card capture).
func (f *fields) expiry(name string, dst *int64, judge func(int64) error) {
	if f.err != nil {
		return
	}
	raw, ok := f.raw(name)
	if !ok {
		f.fail(name, "missing")
		return
	}
	n, ok := parseInteger(raw)
	if !ok {
		f.err = check.InvalidExpiry(name)
		return
	}
	*dst = n
	f.check(judge(n))
}
