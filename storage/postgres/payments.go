package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// Empty metadata is stored as an empty object and empty page origins as an
// empty array (both columns are NOT NULL); intents and card sessions read
// them back as nil.

func metadataArg(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func originsArg(o []string) []string {
	if o == nil {
		return []string{}
	}
	return o
}

// Card sessions.

const cardSessionColumns = `id, store_id, client_secret, customer_id, customer_name, customer_email,
	customer_phone, page_origins, status, card_id, expires_at, created_at`

func scanCardSessionRaw(row scanner) (*keelpay.CardSession, error) {
	var s keelpay.CardSession
	err := row.Scan(&s.ID, &s.StoreID, &s.ClientSecret, &s.Customer.ID, &s.Customer.Name, &s.Customer.Email,
		&s.Customer.Phone, &s.PageOrigins, &s.Status, &s.CardID, tsDst(&s.ExpiresAt), tsDst(&s.CreatedAt))
	if err != nil {
		return nil, mapErr(err)
	}
	if len(s.PageOrigins) == 0 {
		s.PageOrigins = nil
	}
	return &s, nil
}

func (q *queries) CardSessionInsert(ctx context.Context, s *keelpay.CardSession) error {
	return q.write(ctx, func(w querier) error {
		_, err := w.Exec(ctx, `INSERT INTO card_sessions (`+cardSessionColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			s.ID, s.StoreID, q.db.codec.Seal(atrest.CardSessionSecret, s.ClientSecret, s.ID), s.Customer.ID, s.Customer.Name, s.Customer.Email,
			s.Customer.Phone, originsArg(s.PageOrigins), s.Status, s.CardID, ts(s.ExpiresAt), ts(s.CreatedAt))
		return mapErr(err)
	})
}

func (q *queries) CardSessionGet(ctx context.Context, storeID, id string) (*keelpay.CardSession, error) {
	return q.scanCardSession(q.q.QueryRow(ctx, `SELECT `+cardSessionColumns+`
		FROM card_sessions WHERE store_id = $1 AND id = $2`, storeID, id))
}

func (q *queries) CardSessionComplete(ctx context.Context, storeID, id, cardID string, now time.Time) error {
	return q.write(ctx, func(w querier) error {
		return versioned(ctx, w, `UPDATE card_sessions SET status = $1, card_id = $2
			WHERE store_id = $3 AND id = $4 AND status = $5 AND expires_at > $6`,
			`SELECT FROM card_sessions WHERE store_id = $3 AND id = $4`,
			[]any{keelpay.CardSessionCompleted, cardID, storeID, id, keelpay.CardSessionOpen, ts(now)},
			fmt.Errorf("%w: card session %s is not open", storage.ErrConflict, id))
	})
}

func (q *queries) CardSessionExpireDue(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := q.write(ctx, func(w querier) error {
		tag, err := w.Exec(ctx, `UPDATE card_sessions SET status = $1 WHERE status = $2 AND expires_at <= $3`,
			keelpay.CardSessionExpired, keelpay.CardSessionOpen, ts(now))
		n = tag.RowsAffected()
		return mapErr(err)
	})
	return int(n), err
}

// Cards.

const cardColumns = `id, store_id, customer_id, card_session_id, provider_token, brand, last4,
	exp_month, exp_year, status, created_at`

func scanCard(row scanner) (*keelpay.Card, error) {
	var c keelpay.Card
	err := row.Scan(&c.ID, &c.StoreID, &c.CustomerID, &c.CardSessionID, &c.ProviderToken, &c.Brand, &c.Last4,
		&c.ExpMonth, &c.ExpYear, &c.Status, tsDst(&c.CreatedAt))
	if err != nil {
		return nil, mapErr(err)
	}
	return &c, nil
}

func (q *queries) CardInsert(ctx context.Context, c *keelpay.Card) error {
	return q.write(ctx, func(w querier) error {
		_, err := w.Exec(ctx, `INSERT INTO cards (`+cardColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			c.ID, c.StoreID, c.CustomerID, c.CardSessionID, c.ProviderToken, c.Brand, c.Last4,
			c.ExpMonth, c.ExpYear, c.Status, ts(c.CreatedAt))
		return mapErr(err)
	})
}

func (q *queries) CardGet(ctx context.Context, storeID, id string) (*keelpay.Card, error) {
	return scanCard(q.q.QueryRow(ctx, `SELECT `+cardColumns+` FROM cards WHERE store_id = $1 AND id = $2`, storeID, id))
}

func (q *queries) CardUpdateStatus(ctx context.Context, storeID, id string, status keelpay.CardStatus) error {
	return q.write(ctx, func(w querier) error {
		tag, err := w.Exec(ctx, `UPDATE cards SET status = $1 WHERE store_id = $2 AND id = $3`, status, storeID, id)
		return affectedOne(tag, err)
	})
}

// Payment intents.

// intentColumns are every column but seq, in the order of intentValues.
const intentColumns = `id, store_id, status, amount, currency,
	customer_id, customer_name, customer_email, customer_phone,
	description, reference, metadata, billing_country, billing_state, billing_postal_code,
	page_origins, client_secret, card_id,
	pm_brand, pm_last4, pm_exp_month, pm_exp_year, pm_saved,
	authorization_code, order_id, refund_id,
	last_error_code, last_error_decline_code, last_error_message,
	next_action_type, next_action_url, cancellation_reason,
	merchant_id, attempt_id, attempt_at, reconcile_at, reconcile_count,
	succeeded_at, expires_at, created_at, updated_at, version, voided_charges`

// intentValues returns pi's column values in the order of intentColumns.
// An optional part that is absent is stored as empty columns.
func intentValues(pi *keelpay.PaymentIntent) []any {
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
	return []any{
		pi.ID, pi.StoreID, pi.Status, pi.Amount, pi.Currency,
		pi.Customer.ID, pi.Customer.Name, pi.Customer.Email, pi.Customer.Phone,
		pi.Description, pi.Reference, metadataArg(pi.Metadata), billing.Country, billing.State, billing.PostalCode,
		originsArg(pi.PageOrigins), pi.ClientSecret, pi.CardID,
		pm.Brand, pm.Last4, pm.ExpMonth, pm.ExpYear, pm.Saved,
		pi.AuthorizationCode, pi.OrderID, pi.RefundID,
		le.Code, le.DeclineCode, le.Message,
		na.Type, na.URL, pi.CancellationReason,
		pi.MerchantID, pi.AttemptID, ts(pi.AttemptAt), ts(pi.ReconcileAt), pi.ReconcileCount,
		ts(pi.SucceededAt), ts(pi.ExpiresAt), ts(pi.CreatedAt), ts(pi.UpdatedAt), pi.Version,
		voidedArg(pi.VoidedCharges),
	}
}

func voidedArg(v []keelpay.VoidedCharge) []keelpay.VoidedCharge {
	if v == nil {
		return []keelpay.VoidedCharge{}
	}
	return v
}

func scanIntentRaw(row scanner) (*keelpay.PaymentIntent, error) {
	var pi keelpay.PaymentIntent
	var billing keelpay.Billing
	var pm keelpay.PaymentMethod
	var le keelpay.LastError
	var na keelpay.NextAction
	err := row.Scan(
		&pi.ID, &pi.StoreID, &pi.Status, &pi.Amount, &pi.Currency,
		&pi.Customer.ID, &pi.Customer.Name, &pi.Customer.Email, &pi.Customer.Phone,
		&pi.Description, &pi.Reference, &pi.Metadata, &billing.Country, &billing.State, &billing.PostalCode,
		&pi.PageOrigins, &pi.ClientSecret, &pi.CardID,
		&pm.Brand, &pm.Last4, &pm.ExpMonth, &pm.ExpYear, &pm.Saved,
		&pi.AuthorizationCode, &pi.OrderID, &pi.RefundID,
		&le.Code, &le.DeclineCode, &le.Message,
		&na.Type, &na.URL, &pi.CancellationReason,
		&pi.MerchantID, &pi.AttemptID, tsDst(&pi.AttemptAt), tsDst(&pi.ReconcileAt), &pi.ReconcileCount,
		tsDst(&pi.SucceededAt), tsDst(&pi.ExpiresAt), tsDst(&pi.CreatedAt), tsDst(&pi.UpdatedAt), &pi.Version,
		&pi.VoidedCharges,
	)
	if err != nil {
		return nil, mapErr(err)
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
	if billing.Country != "" {
		pi.Billing = &billing
	}
	if pm.Brand != "" {
		pi.PaymentMethod = &pm
	}
	if le.Code != "" {
		pi.LastError = &le
	}
	if na.Type != "" {
		pi.NextAction = &na
	}
	return &pi, nil
}

func (q *queries) PaymentIntentInsert(ctx context.Context, pi *keelpay.PaymentIntent) error {
	sealed := *pi
	sealed.ClientSecret = q.db.codec.Seal(atrest.IntentSecret, pi.ClientSecret, pi.ID)
	values := intentValues(&sealed)
	return q.write(ctx, func(w querier) error {
		_, err := w.Exec(ctx, `INSERT INTO payment_intents (`+intentColumns+`)
			VALUES (`+placeholders(len(values))+`)`, values...)
		return mapErr(err)
	})
}

func (q *queries) PaymentIntentGet(ctx context.Context, storeID, id string) (*keelpay.PaymentIntent, error) {
	return q.scanIntent(q.q.QueryRow(ctx, `SELECT `+intentColumns+`
		FROM payment_intents WHERE store_id = $1 AND id = $2`, storeID, id))
}

func (q *queries) PaymentIntentGetByAttempt(ctx context.Context, attemptID string) (*keelpay.PaymentIntent, error) {
	if attemptID == "" {
		return nil, storage.ErrNotFound
	}
	return q.scanIntent(q.q.QueryRow(ctx, `SELECT `+intentColumns+`
		FROM payment_intents WHERE attempt_id = $1`, attemptID))
}

// intentUpdate is the UPDATE of PaymentIntentUpdate, derived from
// intentColumns: it finds the row by id ($1) and store_id ($2) and the
// version expected (the last parameter), and sets every other column but
// created_at, from the values of intentValues at keep.
var intentUpdate = func() (u struct {
	sql  string
	keep []int
}) {
	var assign []string
	for i, col := range strings.Split(intentColumns, ",") {
		col = strings.TrimSpace(col)
		if col == "id" || col == "store_id" || col == "created_at" || col == "client_secret" {
			continue
		}
		u.keep = append(u.keep, i)
		assign = append(assign, col+" = $"+strconv.Itoa(2+len(u.keep)))
	}
	u.sql = `UPDATE payment_intents SET ` + strings.Join(assign, ", ") + `
		WHERE id = $1 AND store_id = $2 AND version = $` + strconv.Itoa(3+len(u.keep))
	return u
}()

func (q *queries) PaymentIntentUpdate(ctx context.Context, pi *keelpay.PaymentIntent, expectedVersion int64) error {
	next := *pi
	next.Version = expectedVersion + 1
	values := intentValues(&next)
	args := make([]any, 0, len(intentUpdate.keep)+3)
	args = append(args, pi.ID, pi.StoreID)
	for _, i := range intentUpdate.keep {
		args = append(args, values[i])
	}
	args = append(args, expectedVersion)
	err := q.write(ctx, func(w querier) error {
		return versioned(ctx, w, intentUpdate.sql, `SELECT FROM payment_intents WHERE id = $1 AND store_id = $2`, args,
			fmt.Errorf("%w: payment intent %s is no longer at version %d", storage.ErrConflict, pi.ID, expectedVersion))
	})
	if err != nil {
		return err
	}
	pi.Version = next.Version
	return nil
}

func (q *queries) PaymentIntentList(ctx context.Context, p storage.PaymentIntentListParams) ([]*keelpay.PaymentIntent, bool, error) {
	where := "store_id = $1"
	args := []any{p.StoreID}
	order := "DESC"
	cursor := p.StartingAfter
	if p.EndingBefore != "" {
		order, cursor = "ASC", p.EndingBefore
	}
	if cursor != "" {
		var seq int64
		err := q.q.QueryRow(ctx, `SELECT seq FROM payment_intents WHERE store_id = $1 AND id = $2`, p.StoreID, cursor).Scan(&seq)
		if err != nil {
			return nil, false, mapErr(err)
		}
		if order == "DESC" {
			where += " AND seq < $2"
		} else {
			where += " AND seq > $2"
		}
		args = append(args, seq)
	}
	args = append(args, p.Limit+1)
	rows, err := q.q.Query(ctx, `SELECT `+intentColumns+` FROM payment_intents
		WHERE `+where+` ORDER BY seq `+order+` LIMIT $`+strconv.Itoa(len(args)), args...)
	intents, err := collect(rows, err, q.scanIntent)
	if err != nil {
		return nil, false, err
	}
	intents, hasMore := storage.Page(intents, p.Limit, order == "ASC")
	return intents, hasMore, nil
}

func (q *queries) PaymentIntentListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	rows, err := q.q.Query(ctx, `SELECT `+intentColumns+` FROM payment_intents
		WHERE status IN ('processing', 'requires_action') AND reconcile_at <> '-infinity' AND reconcile_at <= $1
		ORDER BY reconcile_at, seq LIMIT $2`, ts(now), limit)
	return collect(rows, err, q.scanIntent)
}

func (q *queries) PaymentIntentListExpireDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	rows, err := q.q.Query(ctx, `SELECT `+intentColumns+` FROM payment_intents
		WHERE status = 'requires_payment_method' AND expires_at <= $1 ORDER BY expires_at, seq LIMIT $2`, ts(now), limit)
	return collect(rows, err, q.scanIntent)
}

func (q *queries) PaymentIntentCounts(ctx context.Context) (storage.PaymentIntentCounts, error) {
	c := storage.PaymentIntentCounts{ByStatus: map[keelpay.PaymentIntentStatus]int{}}
	// The counts are kept by triggers (status_counts); the unknown outcomes
	// are among the processing intents, which the status index bounds.
	rows, err := q.q.Query(ctx, `SELECT status, sum(n)::bigint FROM status_counts WHERE kind = 'payment_intent' GROUP BY status`)
	if err != nil {
		return c, mapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var status keelpay.PaymentIntentStatus
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return c, mapErr(err)
		}
		if n != 0 {
			c.ByStatus[status] = n
		}
	}
	if err := rows.Err(); err != nil {
		return c, mapErr(err)
	}
	err = q.q.QueryRow(ctx, `SELECT count(*) FROM payment_intents
		WHERE status = 'processing' AND last_error_code = 'outcome_unknown'`).Scan(&c.OutcomeUnknown)
	return c, mapErr(err)
}

// scanCardSession reads a card session and opens its sealed fields.
func (q *queries) scanCardSession(row scanner) (*keelpay.CardSession, error) {
	s, err := scanCardSessionRaw(row)
	if err != nil {
		return nil, err
	}
	if err := q.db.codec.OpenCardSession(s); err != nil {
		return nil, err
	}
	return s, nil
}

// scanIntent reads a payment intent and opens its sealed fields.
func (q *queries) scanIntent(row scanner) (*keelpay.PaymentIntent, error) {
	pi, err := scanIntentRaw(row)
	if err != nil {
		return nil, err
	}
	if err := q.db.codec.OpenIntent(pi); err != nil {
		return nil, err
	}
	return pi, nil
}

// Attempt checks.

const attemptCheckColumns = `attempt_id, store_id, payment_intent_id, merchant_id, closed_at, check_at, until, checks`

func (q *queries) AttemptCheckInsert(ctx context.Context, c *storage.AttemptCheck) error {
	return q.write(ctx, func(w querier) error {
		_, err := w.Exec(ctx, `INSERT INTO attempt_checks (`+attemptCheckColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (attempt_id) DO NOTHING`,
			c.AttemptID, c.StoreID, c.PaymentIntentID, c.MerchantID, ts(c.ClosedAt), ts(c.CheckAt), ts(c.Until), c.Checks)
		return mapErr(err)
	})
}

func scanAttemptCheck(row scanner) (*storage.AttemptCheck, error) {
	var c storage.AttemptCheck
	err := row.Scan(&c.AttemptID, &c.StoreID, &c.PaymentIntentID, &c.MerchantID,
		tsDst(&c.ClosedAt), tsDst(&c.CheckAt), tsDst(&c.Until), &c.Checks)
	if err != nil {
		return nil, mapErr(err)
	}
	return &c, nil
}

func (q *queries) AttemptCheckListDue(ctx context.Context, now time.Time, limit int) ([]*storage.AttemptCheck, error) {
	rows, err := q.q.Query(ctx, `SELECT `+attemptCheckColumns+` FROM attempt_checks
		WHERE check_at <= $1 ORDER BY check_at, attempt_id LIMIT $2`, ts(now), limit)
	return collect(rows, err, scanAttemptCheck)
}

func (q *queries) AttemptCheckReschedule(ctx context.Context, attemptID string, checkAt time.Time, checks int) error {
	return q.write(ctx, func(w querier) error {
		tag, err := w.Exec(ctx, `UPDATE attempt_checks SET check_at = $2, checks = $3 WHERE attempt_id = $1`,
			attemptID, ts(checkAt), checks)
		if err != nil {
			return mapErr(err)
		}
		if tag.RowsAffected() == 0 {
			return storage.ErrNotFound
		}
		return nil
	})
}

func (q *queries) AttemptCheckDelete(ctx context.Context, attemptID string) error {
	return q.write(ctx, func(w querier) error {
		_, err := w.Exec(ctx, `DELETE FROM attempt_checks WHERE attempt_id = $1`, attemptID)
		return mapErr(err)
	})
}
