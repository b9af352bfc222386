package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// scanner is what *sql.Row and *sql.Rows have in common.
type scanner = interface{ Scan(...any) error }

// jsonColumn encodes metadata or page origins; empty values are stored as
// an empty object or array and read back as nil.
func jsonColumn(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sqlite: encode column: %w", err)
	}
	return string(b), nil
}

func metadataColumn(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	return jsonColumn(m)
}

func originsColumn(o []string) (string, error) {
	if len(o) == 0 {
		return "[]", nil
	}
	return jsonColumn(o)
}

// decodeMetadata and decodeOrigins are the inverse of metadataColumn and
// originsColumn; the empty forms those write need no JSON decoder.
func decodeMetadata(s string) (map[string]string, error) {
	if s == "{}" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("sqlite: decode metadata: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

func decodeOrigins(s string) ([]string, error) {
	if s == "[]" {
		return nil, nil
	}
	var o []string
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, fmt.Errorf("sqlite: decode page origins: %w", err)
	}
	if len(o) == 0 {
		return nil, nil
	}
	return o, nil
}

// affected turns an UPDATE that changed no row into ErrNotFound, or, when
// the row exists (exists reports it), into conflict.
func affected(ctx context.Context, w querier, n int64, exists string, args []any, conflict error) error {
	if n > 0 {
		return nil
	}
	var count int
	if err := w.QueryRowContext(ctx, exists, args...).Scan(&count); err != nil {
		return mapErr(err)
	}
	if count == 0 {
		return storage.ErrNotFound
	}
	return conflict
}

// Card sessions.

const cardSessionColumns = `id, store_id, client_secret, customer_id, customer_name, customer_email,
	customer_phone, page_origins, status, card_id, expires_at, created_at`

func scanCardSessionRaw(row scanner) (*keelpay.CardSession, error) {
	var s keelpay.CardSession
	var origins string
	var expires, created int64
	err := row.Scan(&s.ID, &s.StoreID, &s.ClientSecret, &s.Customer.ID, &s.Customer.Name, &s.Customer.Email,
		&s.Customer.Phone, &origins, &s.Status, &s.CardID, &expires, &created)
	if err != nil {
		return nil, mapErr(err)
	}
	if s.PageOrigins, err = decodeOrigins(origins); err != nil {
		return nil, err
	}
	s.ExpiresAt, s.CreatedAt = fromMicros(expires), fromMicros(created)
	return &s, nil
}

func (q *queries) CardSessionInsert(ctx context.Context, s *keelpay.CardSession) error {
	origins, err := originsColumn(s.PageOrigins)
	if err != nil {
		return err
	}
	return q.write(ctx, func(w querier) error {
		_, err := w.ExecContext(ctx, `INSERT INTO card_sessions (`+cardSessionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.StoreID, q.db.codec.Seal(atrest.CardSessionSecret, s.ClientSecret, s.ID), s.Customer.ID, s.Customer.Name, s.Customer.Email,
			s.Customer.Phone, origins, s.Status, s.CardID, micros(s.ExpiresAt), micros(s.CreatedAt))
		return mapErr(err)
	})
}

func (q *queries) CardSessionGet(ctx context.Context, storeID, id string) (*keelpay.CardSession, error) {
	return q.scanCardSession(q.r.QueryRowContext(ctx, `SELECT `+cardSessionColumns+`
		FROM card_sessions WHERE store_id = ? AND id = ?`, storeID, id))
}

func (q *queries) CardSessionComplete(ctx context.Context, storeID, id, cardID string, now time.Time) error {
	return q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE card_sessions SET status = ?, card_id = ?
			WHERE store_id = ? AND id = ? AND status = ? AND expires_at > ?`,
			keelpay.CardSessionCompleted, cardID, storeID, id, keelpay.CardSessionOpen, micros(now))
		if err != nil {
			return mapErr(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return mapErr(err)
		}
		return affected(ctx, w, n, `SELECT count(*) FROM card_sessions WHERE store_id = ? AND id = ?`,
			[]any{storeID, id}, fmt.Errorf("%w: card session %s is not open", storage.ErrConflict, id))
	})
}

func (q *queries) CardSessionExpireDue(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE card_sessions SET status = ? WHERE status = ? AND expires_at <= ?`,
			keelpay.CardSessionExpired, keelpay.CardSessionOpen, micros(now))
		if err != nil {
			return mapErr(err)
		}
		n, err = res.RowsAffected()
		return mapErr(err)
	})
	return int(n), err
}

// Cards.

const cardColumns = `id, store_id, customer_id, card_session_id, provider_token, brand, last4,
	exp_month, exp_year, status, created_at`

func scanCard(row scanner) (*keelpay.Card, error) {
	var c keelpay.Card
	var created int64
	err := row.Scan(&c.ID, &c.StoreID, &c.CustomerID, &c.CardSessionID, &c.ProviderToken, &c.Brand, &c.Last4,
		&c.ExpMonth, &c.ExpYear, &c.Status, &created)
	if err != nil {
		return nil, mapErr(err)
	}
	c.CreatedAt = fromMicros(created)
	return &c, nil
}

func (q *queries) CardInsert(ctx context.Context, c *keelpay.Card) error {
	return q.write(ctx, func(w querier) error {
		_, err := w.ExecContext(ctx, `INSERT INTO cards (`+cardColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.StoreID, c.CustomerID, c.CardSessionID, c.ProviderToken, c.Brand, c.Last4,
			c.ExpMonth, c.ExpYear, c.Status, micros(c.CreatedAt))
		return mapErr(err)
	})
}

func (q *queries) CardGet(ctx context.Context, storeID, id string) (*keelpay.Card, error) {
	return scanCard(q.r.QueryRowContext(ctx, `SELECT `+cardColumns+` FROM cards WHERE store_id = ? AND id = ?`, storeID, id))
}

func (q *queries) CardUpdateStatus(ctx context.Context, storeID, id string, status keelpay.CardStatus) error {
	return q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE cards SET status = ? WHERE store_id = ? AND id = ?`, status, storeID, id)
		if err != nil {
			return mapErr(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return mapErr(err)
		} else if n == 0 {
			return storage.ErrNotFound
		}
		return nil
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
func intentValues(pi *keelpay.PaymentIntent) ([]any, error) {
	metadata, err := metadataColumn(pi.Metadata)
	if err != nil {
		return nil, err
	}
	origins, err := originsColumn(pi.PageOrigins)
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
	voided := "[]"
	if len(pi.VoidedCharges) > 0 {
		if voided, err = jsonColumn(pi.VoidedCharges); err != nil {
			return nil, err
		}
	}
	return []any{
		pi.ID, pi.StoreID, pi.Status, pi.Amount, pi.Currency,
		pi.Customer.ID, pi.Customer.Name, pi.Customer.Email, pi.Customer.Phone,
		pi.Description, pi.Reference, metadata, billing.Country, billing.State, billing.PostalCode,
		origins, pi.ClientSecret, pi.CardID,
		pm.Brand, pm.Last4, pm.ExpMonth, pm.ExpYear, pm.Saved,
		pi.AuthorizationCode, pi.OrderID, pi.RefundID,
		le.Code, le.DeclineCode, le.Message,
		na.Type, na.URL, pi.CancellationReason,
		pi.MerchantID, pi.AttemptID, micros(pi.AttemptAt), micros(pi.ReconcileAt), pi.ReconcileCount,
		micros(pi.SucceededAt), micros(pi.ExpiresAt), micros(pi.CreatedAt), micros(pi.UpdatedAt), pi.Version,
		voided,
	}, nil
}

// intentSelect reads a payment intent as one value (see jsonRow): the
// columns of intentColumns, in order.
const intentSelect = `json_array(` + intentColumns + `)`

func scanIntentRaw(row scanner) (*keelpay.PaymentIntent, error) {
	var text string
	if err := row.Scan(&text); err != nil {
		return nil, mapErr(err)
	}
	pi := &keelpay.PaymentIntent{}
	r := jsonRow{s: text}
	pi.ID, pi.StoreID, pi.Status, pi.Amount, pi.Currency = r.str(), r.str(), keelpay.PaymentIntentStatus(r.str()), r.int(), r.str()
	pi.Customer = keelpay.Customer{ID: r.str(), Name: r.str(), Email: r.str(), Phone: r.str()}
	pi.Description, pi.Reference = r.str(), r.str()
	metadata := r.str()
	billing := keelpay.Billing{Country: r.str(), State: r.str(), PostalCode: r.str()}
	origins := r.str()
	pi.ClientSecret, pi.CardID = r.str(), r.str()
	pm := keelpay.PaymentMethod{Brand: r.str(), Last4: r.str(), ExpMonth: int(r.int()), ExpYear: int(r.int()), Saved: r.int() != 0}
	pi.AuthorizationCode, pi.OrderID, pi.RefundID = r.str(), r.str(), r.str()
	le := keelpay.LastError{Code: r.str(), DeclineCode: r.str(), Message: r.str()}
	na := keelpay.NextAction{Type: r.str(), URL: r.str()}
	pi.CancellationReason = r.str()
	pi.MerchantID, pi.AttemptID = r.str(), r.str()
	attemptAt, reconcileAt, reconcileCount := r.int(), r.int(), r.int()
	succeededAt, expiresAt, createdAt, updatedAt := r.int(), r.int(), r.int(), r.int()
	pi.Version = r.int()
	voided := r.str()
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("sqlite: read payment intent: %w", err)
	}
	pi.ReconcileCount = int(reconcileCount)
	var err error
	if pi.Metadata, err = decodeMetadata(metadata); err != nil {
		return nil, err
	}
	if pi.PageOrigins, err = decodeOrigins(origins); err != nil {
		return nil, err
	}
	if voided != "[]" {
		if err := json.Unmarshal([]byte(voided), &pi.VoidedCharges); err != nil {
			return nil, fmt.Errorf("sqlite: decode voided charges: %w", err)
		}
	}
	// Copied only when present: a pointer to a local would put it on the
	// heap every time.
	if billing.Country != "" {
		pi.Billing = new(billing)
	}
	if pm.Brand != "" {
		pi.PaymentMethod = new(pm)
	}
	if le.Code != "" {
		pi.LastError = new(le)
	}
	if na.Type != "" {
		pi.NextAction = new(na)
	}
	pi.AttemptAt, pi.ReconcileAt, pi.SucceededAt = fromMicros(attemptAt), fromMicros(reconcileAt), fromMicros(succeededAt)
	pi.ExpiresAt, pi.CreatedAt, pi.UpdatedAt = fromMicros(expiresAt), fromMicros(createdAt), fromMicros(updatedAt)
	return pi, nil
}

func (q *queries) PaymentIntentInsert(ctx context.Context, pi *keelpay.PaymentIntent) error {
	sealed := *pi
	sealed.ClientSecret = q.db.codec.Seal(atrest.IntentSecret, pi.ClientSecret, pi.ID)
	values, err := intentValues(&sealed)
	if err != nil {
		return err
	}
	placeholders := strings.Repeat("?, ", len(values)-1) + "?"
	return q.write(ctx, func(w querier) error {
		_, err := w.ExecContext(ctx, `INSERT INTO payment_intents (`+intentColumns+`) VALUES (`+placeholders+`)`, values...)
		return mapErr(err)
	})
}

func (q *queries) PaymentIntentGet(ctx context.Context, storeID, id string) (*keelpay.PaymentIntent, error) {
	return q.scanIntent(q.r.QueryRowContext(ctx, `SELECT `+intentSelect+`
		FROM payment_intents WHERE store_id = ? AND id = ?`, storeID, id))
}

func (q *queries) PaymentIntentGetByAttempt(ctx context.Context, attemptID string) (*keelpay.PaymentIntent, error) {
	if attemptID == "" {
		return nil, storage.ErrNotFound
	}
	return q.scanIntent(q.r.QueryRowContext(ctx, `SELECT `+intentSelect+`
		FROM payment_intents WHERE attempt_id = ?`, attemptID))
}

// intentUpdate is the SET clause of an update, derived from intentColumns,
// and which of intentValues it takes: every column but the identity and
// created_at.
var intentUpdate = func() (u struct {
	set  string
	keep []int
}) {
	var assign []string
	for i, col := range strings.Split(intentColumns, ",") {
		col = strings.TrimSpace(col)
		if col == "id" || col == "store_id" || col == "created_at" || col == "client_secret" {
			continue
		}
		assign = append(assign, col+" = ?")
		u.keep = append(u.keep, i)
	}
	u.set = strings.Join(assign, ", ")
	return u
}()

func (q *queries) PaymentIntentUpdate(ctx context.Context, pi *keelpay.PaymentIntent, expectedVersion int64) error {
	next := *pi
	next.Version = expectedVersion + 1
	values, err := intentValues(&next)
	if err != nil {
		return err
	}
	args := make([]any, 0, len(intentUpdate.keep)+3)
	for _, i := range intentUpdate.keep {
		args = append(args, values[i])
	}
	args = append(args, pi.ID, pi.StoreID, expectedVersion)
	err = q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE payment_intents SET `+intentUpdate.set+`
			WHERE id = ? AND store_id = ? AND version = ?`, args...)
		if err != nil {
			return mapErr(err)
		}
		changed, err := res.RowsAffected()
		if err != nil {
			return mapErr(err)
		}
		return affected(ctx, w, changed, `SELECT count(*) FROM payment_intents WHERE id = ? AND store_id = ?`,
			[]any{pi.ID, pi.StoreID},
			fmt.Errorf("%w: payment intent %s is no longer at version %d", storage.ErrConflict, pi.ID, expectedVersion))
	})
	if err != nil {
		return err
	}
	pi.Version = next.Version
	return nil
}

func (q *queries) PaymentIntentList(ctx context.Context, p storage.PaymentIntentListParams) ([]*keelpay.PaymentIntent, bool, error) {
	where := "store_id = ?"
	args := []any{p.StoreID}
	order := "DESC"
	cursor := p.StartingAfter
	if p.EndingBefore != "" {
		order, cursor = "ASC", p.EndingBefore
	}
	if cursor != "" {
		var seq int64
		err := q.r.QueryRowContext(ctx, `SELECT seq FROM payment_intents WHERE store_id = ? AND id = ?`, p.StoreID, cursor).Scan(&seq)
		if err != nil {
			return nil, false, mapErr(err)
		}
		if order == "DESC" {
			where += " AND seq < ?"
		} else {
			where += " AND seq > ?"
		}
		args = append(args, seq)
	}
	args = append(args, p.Limit+1)
	rows, err := q.r.QueryContext(ctx, `SELECT `+intentSelect+` FROM payment_intents
		WHERE `+where+` ORDER BY seq `+order+` LIMIT ?`, args...)
	if err != nil {
		return nil, false, mapErr(err)
	}
	intents, err := collect(rows, q.scanIntent)
	if err != nil {
		return nil, false, err
	}
	intents, hasMore := storage.Page(intents, p.Limit, order == "ASC")
	return intents, hasMore, nil
}

func (q *queries) PaymentIntentListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	rows, err := q.r.QueryContext(ctx, `SELECT `+intentSelect+` FROM payment_intents
		WHERE status IN (?, ?) AND reconcile_at <> 0 AND reconcile_at <= ?
		ORDER BY reconcile_at, seq LIMIT ?`,
		keelpay.IntentProcessing, keelpay.IntentRequiresAction, micros(now), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, q.scanIntent)
}

func (q *queries) PaymentIntentListExpireDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	rows, err := q.r.QueryContext(ctx, `SELECT `+intentSelect+` FROM payment_intents
		WHERE status = ? AND expires_at <= ? ORDER BY expires_at, seq LIMIT ?`,
		keelpay.IntentRequiresPaymentMethod, micros(now), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, q.scanIntent)
}

func (q *queries) PaymentIntentCounts(ctx context.Context) (storage.PaymentIntentCounts, error) {
	c := storage.PaymentIntentCounts{ByStatus: map[keelpay.PaymentIntentStatus]int{}}
	// The counts are kept by triggers (status_counts); the unknown outcomes
	// are among the processing intents, which the status index bounds.
	rows, err := q.r.QueryContext(ctx, `SELECT status, n FROM status_counts WHERE kind = 'payment_intent'`)
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
	err = q.r.QueryRowContext(ctx, `SELECT count(*) FROM payment_intents INDEXED BY payment_intents_status
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
		_, err := w.ExecContext(ctx, `INSERT INTO attempt_checks (`+attemptCheckColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (attempt_id) DO NOTHING`,
			c.AttemptID, c.StoreID, c.PaymentIntentID, c.MerchantID, micros(c.ClosedAt), micros(c.CheckAt), micros(c.Until), c.Checks)
		return mapErr(err)
	})
}

func scanAttemptCheck(row interface{ Scan(...any) error }) (*storage.AttemptCheck, error) {
	var c storage.AttemptCheck
	var closedAt, checkAt, until int64
	if err := row.Scan(&c.AttemptID, &c.StoreID, &c.PaymentIntentID, &c.MerchantID, &closedAt, &checkAt, &until, &c.Checks); err != nil {
		return nil, mapErr(err)
	}
	c.ClosedAt, c.CheckAt, c.Until = fromMicros(closedAt), fromMicros(checkAt), fromMicros(until)
	return &c, nil
}

func (q *queries) AttemptCheckListDue(ctx context.Context, now time.Time, limit int) ([]*storage.AttemptCheck, error) {
	rows, err := q.r.QueryContext(ctx, `SELECT `+attemptCheckColumns+` FROM attempt_checks
		WHERE check_at <= ? ORDER BY check_at, attempt_id LIMIT ?`, micros(now), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, scanAttemptCheck)
}

func (q *queries) AttemptCheckReschedule(ctx context.Context, attemptID string, checkAt time.Time, checks int) error {
	return q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE attempt_checks SET check_at = ?, checks = ? WHERE attempt_id = ?`,
			micros(checkAt), checks, attemptID)
		if err != nil {
			return mapErr(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return mapErr(err)
		} else if n == 0 {
			return storage.ErrNotFound
		}
		return nil
	})
}

func (q *queries) AttemptCheckDelete(ctx context.Context, attemptID string) error {
	return q.write(ctx, func(w querier) error {
		_, err := w.ExecContext(ctx, `DELETE FROM attempt_checks WHERE attempt_id = ?`, attemptID)
		return mapErr(err)
	})
}
