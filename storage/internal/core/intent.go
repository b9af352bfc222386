package core

import (
	"sync"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// intentRow is a payment intent with room for its optional parts, so that
// reading one is one allocation whichever parts it has. An optional part
// that is absent is stored as empty columns.
type intentRow struct {
	pi      keelpay.PaymentIntent
	billing keelpay.Billing
	pm      keelpay.PaymentMethod
	le      keelpay.LastError
	na      keelpay.NextAction
}

type intentCol = column[intentRow]

// intentTable declares the columns of a payment intent (all but seq):
// IntentColumns, the values of an insert and of the update, the
// destinations of ScanIntent and the parameters of their queries derive
// from it. A field of keelpay.PaymentIntent is stored by one of these
// columns or listed in intentNotStored (TestIntentFieldsStored).
var intentTable = table[intentRow]{
	id: func(x *intentRow) string { return x.pi.ID },
	cols: []intentCol{
		col("id", kText, func(x *intentRow) any { return &x.pi.ID }).isKey(),
		col("store_id", kText, func(x *intentRow) any { return &x.pi.StoreID }).isKey(),
		col("status", kText, func(x *intentRow) any { return (*string)(&x.pi.Status) }),
		col("amount", kInt64, func(x *intentRow) any { return &x.pi.Amount }),
		col("currency", kText, func(x *intentRow) any { return &x.pi.Currency }),
		col("customer_id", kText, func(x *intentRow) any { return &x.pi.Customer.ID }).once(),
		col("customer_name", kText, func(x *intentRow) any { return &x.pi.Customer.Name }).seal(atrest.IntentName).once(),
		col("customer_email", kText, func(x *intentRow) any { return &x.pi.Customer.Email }).seal(atrest.IntentEmail).once(),
		col("customer_phone", kText, func(x *intentRow) any { return &x.pi.Customer.Phone }).seal(atrest.IntentPhone).once(),
		col("description", kText, func(x *intentRow) any { return &x.pi.Description }),
		col("reference", kText, func(x *intentRow) any { return &x.pi.Reference }),
		col("metadata", kMetadata, func(x *intentRow) any { return &x.pi.Metadata }),
		col("billing_country", kText, func(x *intentRow) any { return &x.billing.Country }).seal(atrest.IntentBillingCountry),
		col("billing_state", kText, func(x *intentRow) any { return &x.billing.State }).seal(atrest.IntentBillingState),
		col("billing_postal_code", kText, func(x *intentRow) any { return &x.billing.PostalCode }).seal(atrest.IntentBillingPostCode),
		col("page_origins", kStrings, func(x *intentRow) any { return &x.pi.PageOrigins }),
		col("client_secret", kText, func(x *intentRow) any { return &x.pi.ClientSecret }).seal(atrest.IntentSecret).once(),
		col("card_id", kText, func(x *intentRow) any { return &x.pi.CardID }),
		col("pm_brand", kText, func(x *intentRow) any { return &x.pm.Brand }),
		col("pm_last4", kText, func(x *intentRow) any { return &x.pm.Last4 }),
		col("pm_exp_month", kInt, func(x *intentRow) any { return &x.pm.ExpMonth }),
		col("pm_exp_year", kInt, func(x *intentRow) any { return &x.pm.ExpYear }),
		col("pm_saved", kBool, func(x *intentRow) any { return &x.pm.Saved }),
		col("authorization_code", kText, func(x *intentRow) any { return &x.pi.AuthorizationCode }),
		col("order_id", kText, func(x *intentRow) any { return &x.pi.OrderID }),
		col("refund_id", kText, func(x *intentRow) any { return &x.pi.RefundID }),
		col("last_error_code", kText, func(x *intentRow) any { return &x.le.Code }),
		col("last_error_decline_code", kText, func(x *intentRow) any { return &x.le.DeclineCode }),
		col("last_error_message", kText, func(x *intentRow) any { return &x.le.Message }),
		col("next_action_type", kText, func(x *intentRow) any { return &x.na.Type }),
		col("next_action_url", kText, func(x *intentRow) any { return &x.na.URL }),
		col("cancellation_reason", kText, func(x *intentRow) any { return &x.pi.CancellationReason }),
		col("merchant_id", kText, func(x *intentRow) any { return &x.pi.MerchantID }),
		col("attempt_id", kText, func(x *intentRow) any { return &x.pi.AttemptID }),
		col("attempt_at", kTime, func(x *intentRow) any { return &x.pi.AttemptAt }),
		col("reconcile_at", kTime, func(x *intentRow) any { return &x.pi.ReconcileAt }),
		col("reconcile_count", kInt, func(x *intentRow) any { return &x.pi.ReconcileCount }),
		col("succeeded_at", kTime, func(x *intentRow) any { return &x.pi.SucceededAt }),
		col("expires_at", kTime, func(x *intentRow) any { return &x.pi.ExpiresAt }),
		col("created_at", kTime, func(x *intentRow) any { return &x.pi.CreatedAt }).once(),
		col("updated_at", kTime, func(x *intentRow) any { return &x.pi.UpdatedAt }),
		col("version", kInt64, func(x *intentRow) any { return &x.pi.Version }),
		col("voided_charges", kVoided, func(x *intentRow) any { return &x.pi.VoidedCharges }),
	},
}

// intentNotStored lists the fields of keelpay.PaymentIntent (paths such as
// "Billing.Country") that no column stores: none.
var intentNotStored = []string{}

// IntentColumns are every column of a payment intent but seq, in the
// order of intentTable.
var IntentColumns = intentTable.list()

// intentRows recycles the intentRow that the values of an intent are
// read from: the values hold copies, not pointers into it.
var intentRows = sync.Pool{New: func() any { return new(intentRow) }}

// intentValues appends pi's values of the columns p picks to out (see
// table.values), its optional parts absent as empty columns.
func (r Records) intentValues(pi *keelpay.PaymentIntent, out []any, p pick) ([]any, error) {
	x := intentRows.Get().(*intentRow)
	*x = intentRow{pi: *pi}
	if pi.Billing != nil {
		x.billing = *pi.Billing
	}
	if pi.PaymentMethod != nil {
		x.pm = *pi.PaymentMethod
	}
	if pi.LastError != nil {
		x.le = *pi.LastError
	}
	if pi.NextAction != nil {
		x.na = *pi.NextAction
	}
	out, err := intentTable.values(r, x, out, p)
	*x = intentRow{} // the pool keeps no reference into the intent
	intentRows.Put(x)
	return out, err
}

// SealedIntentValues returns pi's values in the order of IntentColumns,
// its client secret, its customer's personal data and its billing
// details sealed: the values of an insert.
func (r Records) SealedIntentValues(pi *keelpay.PaymentIntent) ([]any, error) {
	return r.intentValues(pi, make([]any, 0, len(intentTable.cols)), pickAll)
}

// intentUpdateArgs returns the arguments of the update of an intent
// (intentTable.update) that writes next, found at expectedVersion.
func (r Records) intentUpdateArgs(next *keelpay.PaymentIntent, expectedVersion int64) ([]any, error) {
	args := make([]any, 0, len(intentTable.cols)+1)
	args, err := r.intentValues(next, args, pickKeys)
	if err == nil {
		args, err = r.intentValues(next, args, pickUpdated)
	}
	if err != nil {
		return nil, err
	}
	return append(args, expectedVersion), nil
}

// intentDsts recycles the destinations of ScanIntent: one for each column
// is a larger allocation than the intent's own.
var intentDsts = sync.Pool{New: func() any {
	s := make([]any, len(intentTable.cols))
	return &s
}}

// ScanIntent reads a payment intent from the columns of IntentColumns and
// opens its client secret, its customer's personal data and its billing
// details.
func (r Records) ScanIntent(row Row) (*keelpay.PaymentIntent, error) {
	x := new(intentRow)
	pi := &x.pi
	d := r.D
	dp := intentDsts.Get().(*[]any)
	dst := *dp
	intentTable.dsts(d, x, dst)
	err := row.Scan(dst...)
	clear(dst) // the pool keeps no pointer into the intent
	intentDsts.Put(dp)
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
	if err := intentTable.open(r, x); err != nil {
		return nil, err
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
	return pi, nil
}
