package core

import (
	"strings"
	"sync"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// IntentColumns are every column of a payment intent but seq, in the
// order of IntentValues and of ScanIntent's destinations.
const IntentColumns = `id, store_id, status, amount, currency,
	customer_id, customer_name, customer_email, customer_phone,
	description, reference, metadata, billing_country, billing_state, billing_postal_code,
	page_origins, client_secret, card_id,
	pm_brand, pm_last4, pm_exp_month, pm_exp_year, pm_saved,
	authorization_code, order_id, refund_id,
	last_error_code, last_error_decline_code, last_error_message,
	next_action_type, next_action_url, cancellation_reason,
	merchant_id, attempt_id, attempt_at, reconcile_at, reconcile_count,
	succeeded_at, expires_at, created_at, updated_at, version, voided_charges`

// intentColumnCount is the number of IntentColumns.
const intentColumnCount = 43

// IntentValues returns pi's values in the order of IntentColumns, its
// customer's personal data and its billing details sealed. An optional
// part that is absent is stored as empty columns. The client secret is
// stored as it is: an insert seals it (SealedIntentValues), an update
// does not write it.
func (r Records) IntentValues(pi *keelpay.PaymentIntent) ([]any, error) {
	metadata, err := r.D.Metadata(pi.Metadata)
	if err != nil {
		return nil, err
	}
	origins, err := r.D.Strings(pi.PageOrigins)
	if err != nil {
		return nil, err
	}
	voided, err := r.D.Voided(pi.VoidedCharges)
	if err != nil {
		return nil, err
	}
	var billing keelpay.Billing
	if pi.Billing != nil {
		billing = *pi.Billing
	}
	var pm keelpay.PaymentMethod
	if pi.PaymentMethod != nil {
		pm = *pi.PaymentMethod
	}
	var le keelpay.LastError
	if pi.LastError != nil {
		le = *pi.LastError
	}
	var na keelpay.NextAction
	if pi.NextAction != nil {
		na = *pi.NextAction
	}
	d, c := r.D, r.Codec
	return []any{
		pi.ID, pi.StoreID, string(pi.Status), pi.Amount, pi.Currency,
		pi.Customer.ID, c.Seal(atrest.IntentName, pi.Customer.Name, pi.ID), c.Seal(atrest.IntentEmail, pi.Customer.Email, pi.ID),
		c.Seal(atrest.IntentPhone, pi.Customer.Phone, pi.ID),
		pi.Description, pi.Reference, metadata, c.Seal(atrest.IntentBillingCountry, billing.Country, pi.ID),
		c.Seal(atrest.IntentBillingState, billing.State, pi.ID), c.Seal(atrest.IntentBillingPostCode, billing.PostalCode, pi.ID),
		origins, pi.ClientSecret, pi.CardID,
		pm.Brand, pm.Last4, pm.ExpMonth, pm.ExpYear, pm.Saved,
		pi.AuthorizationCode, pi.OrderID, pi.RefundID,
		le.Code, le.DeclineCode, le.Message,
		na.Type, na.URL, pi.CancellationReason,
		pi.MerchantID, pi.AttemptID, d.Time(pi.AttemptAt), d.Time(pi.ReconcileAt), pi.ReconcileCount,
		d.Time(pi.SucceededAt), d.Time(pi.ExpiresAt), d.Time(pi.CreatedAt), d.Time(pi.UpdatedAt), pi.Version,
		voided,
	}, nil
}

// SealedIntentValues is IntentValues with the client secret sealed too,
// the values of an insert.
func (r Records) SealedIntentValues(pi *keelpay.PaymentIntent) ([]any, error) {
	sealed := *pi
	sealed.ClientSecret = r.Codec.Seal(atrest.IntentSecret, pi.ClientSecret, pi.ID)
	return r.IntentValues(&sealed)
}

// intentRow is a payment intent with room for its optional parts, so that
// reading one is one allocation whichever parts it has.
type intentRow struct {
	pi      keelpay.PaymentIntent
	billing keelpay.Billing
	pm      keelpay.PaymentMethod
	le      keelpay.LastError
	na      keelpay.NextAction
}

// intentDsts recycles the destinations of ScanIntent: 43 of them are a
// larger allocation than the intent's own.
var intentDsts = sync.Pool{New: func() any { return new([intentColumnCount]any) }}

// ScanIntent reads a payment intent from the columns of IntentColumns and
// opens its client secret, its customer's personal data and its billing
// details.
func (r Records) ScanIntent(row Row) (*keelpay.PaymentIntent, error) {
	x := new(intentRow)
	pi := &x.pi
	d := r.D
	dst := intentDsts.Get().(*[intentColumnCount]any)
	*dst = [intentColumnCount]any{
		&pi.ID, &pi.StoreID, (*string)(&pi.Status), &pi.Amount, &pi.Currency,
		&pi.Customer.ID, &pi.Customer.Name, &pi.Customer.Email, &pi.Customer.Phone,
		&pi.Description, &pi.Reference, d.MetadataDst(&pi.Metadata), &x.billing.Country, &x.billing.State, &x.billing.PostalCode,
		d.StringsDst(&pi.PageOrigins), &pi.ClientSecret, &pi.CardID,
		&x.pm.Brand, &x.pm.Last4, &x.pm.ExpMonth, &x.pm.ExpYear, &x.pm.Saved,
		&pi.AuthorizationCode, &pi.OrderID, &pi.RefundID,
		&x.le.Code, &x.le.DeclineCode, &x.le.Message,
		&x.na.Type, &x.na.URL, &pi.CancellationReason,
		&pi.MerchantID, &pi.AttemptID, d.TimeDst(&pi.AttemptAt), d.TimeDst(&pi.ReconcileAt), &pi.ReconcileCount,
		d.TimeDst(&pi.SucceededAt), d.TimeDst(&pi.ExpiresAt), d.TimeDst(&pi.CreatedAt), d.TimeDst(&pi.UpdatedAt), &pi.Version,
		d.VoidedDst(&pi.VoidedCharges),
	}
	err := row.Scan(dst[:]...)
	*dst = [intentColumnCount]any{} // the pool keeps no pointer into the intent
	intentDsts.Put(dst)
	if err != nil {
		return nil, d.MapErr(err)
	}
	if len(pi.Metadata) == 0 {
		pi.Metadata = nil
	}
	if len(pi.PageOrigins) == 0 {
		pi.PageOrigins = nil
	}
	if len(pi.VoidedCharges) == 0 {
		pi.VoidedCharges = nil
	}
	if x.billing.Country != "" {
		pi.Billing = &x.billing
	}
	if x.pm.Brand != "" {
		pi.PaymentMethod = &x.pm
	}
	if x.le.Code != "" {
		pi.LastError = &x.le
	}
	if x.na.Type != "" {
		pi.NextAction = &x.na
	}
	if err := r.Codec.OpenIntent(pi); err != nil {
		return nil, err
	}
	return pi, nil
}

// intentUpdate is the UPDATE of PaymentIntentUpdate for one dialect,
// derived from IntentColumns: it finds the row by id (parameter 1),
// store_id (2) and the version expected (the last parameter), and sets
// every other column but created_at and client_secret, from the values of
// IntentValues at keep.
type intentUpdate struct {
	sql  string
	keep []int
}

func newIntentUpdate(d Dialect) intentUpdate {
	var u intentUpdate
	var assign []string
	for i, col := range strings.Split(IntentColumns, ",") {
		col = strings.TrimSpace(col)
		if col == "id" || col == "store_id" || col == "created_at" || col == "client_secret" {
			continue
		}
		u.keep = append(u.keep, i)
		assign = append(assign, col+" = "+d.Placeholder(2+len(u.keep)))
	}
	u.sql = `UPDATE payment_intents SET ` + strings.Join(assign, ", ") + `
		WHERE id = ` + d.Placeholder(1) + ` AND store_id = ` + d.Placeholder(2) + ` AND version = ` + d.Placeholder(3+len(u.keep))
	return u
}
