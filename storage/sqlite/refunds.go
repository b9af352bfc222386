package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

const refundColumns = `id, store_id, payment_intent_id, amount, currency, reason, metadata, status, attempts,
	attempt_id, last_sent_at, last_error, reconcile_at, reconcile_count, succeeded_at, created_at, updated_at, version`

func scanRefund(row interface{ Scan(...any) error }) (*keelpay.Refund, error) {
	var r keelpay.Refund
	var metadata, lastError string
	var lastSent, reconcileAt, succeeded, created, updated int64
	err := row.Scan(&r.ID, &r.StoreID, &r.PaymentIntentID, &r.Amount, &r.Currency, &r.Reason, &metadata, &r.Status,
		&r.Attempts, &r.AttemptID, &lastSent, &lastError, &reconcileAt, &r.ReconcileCount, &succeeded, &created, &updated, &r.Version)
	if err != nil {
		return nil, mapErr(err)
	}
	if err := json.Unmarshal([]byte(metadata), &r.Metadata); err != nil {
		return nil, fmt.Errorf("sqlite: refund %s metadata: %w", r.ID, err)
	}
	if lastError != "" {
		r.LastError = &keelpay.LastError{}
		if err := json.Unmarshal([]byte(lastError), r.LastError); err != nil {
			return nil, fmt.Errorf("sqlite: refund %s last_error: %w", r.ID, err)
		}
	}
	r.LastSentAt, r.ReconcileAt, r.SucceededAt = fromMicros(lastSent), fromMicros(reconcileAt), fromMicros(succeeded)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &r, nil
}

// refundJSON returns the JSON columns of a refund.
func refundJSON(r *keelpay.Refund) (metadata, lastError string, err error) {
	m := r.Metadata
	if m == nil {
		m = map[string]string{}
	}
	mb, err := json.Marshal(m)
	if err != nil {
		return "", "", err
	}
	if r.LastError != nil {
		lb, err := json.Marshal(r.LastError)
		if err != nil {
			return "", "", err
		}
		lastError = string(lb)
	}
	return string(mb), lastError, nil
}

func (q *queries) RefundInsert(ctx context.Context, r *keelpay.Refund) error {
	metadata, lastError, err := refundJSON(r)
	if err != nil {
		return err
	}
	return q.write(ctx, func(w querier) error {
		_, err := w.ExecContext(ctx, `INSERT INTO refunds (`+refundColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.StoreID, r.PaymentIntentID, r.Amount, r.Currency, r.Reason, metadata, r.Status, r.Attempts,
			r.AttemptID, micros(r.LastSentAt), lastError, micros(r.ReconcileAt), r.ReconcileCount,
			micros(r.SucceededAt), micros(r.CreatedAt), micros(r.UpdatedAt), r.Version)
		return mapErr(err)
	})
}

func (q *queries) RefundGet(ctx context.Context, storeID, id string) (*keelpay.Refund, error) {
	return scanRefund(q.r.QueryRowContext(ctx, `SELECT `+refundColumns+` FROM refunds WHERE store_id = ? AND id = ?`, storeID, id))
}

func (q *queries) RefundGetByIntent(ctx context.Context, storeID, paymentIntentID string) (*keelpay.Refund, error) {
	return scanRefund(q.r.QueryRowContext(ctx, `SELECT `+refundColumns+` FROM refunds
		WHERE store_id = ? AND payment_intent_id = ?`, storeID, paymentIntentID))
}

// versioned checks the outcome of a write conditional on a row's version.
func versioned(ctx context.Context, w querier, res interface{ RowsAffected() (int64, error) }, table, storeID, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(err)
	}
	if n > 0 {
		return nil
	}
	var exists int
	if err := w.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE store_id = ? AND id = ?`, storeID, id).Scan(&exists); err != nil {
		return mapErr(err)
	}
	if exists == 0 {
		return storage.ErrNotFound
	}
	return fmt.Errorf("%w: %s %s changed", storage.ErrConflict, table, id)
}

func (q *queries) RefundUpdate(ctx context.Context, r *keelpay.Refund, expectedVersion int64) error {
	metadata, lastError, err := refundJSON(r)
	if err != nil {
		return err
	}
	err = q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE refunds SET amount = ?, currency = ?, reason = ?, metadata = ?,
			status = ?, attempts = ?, attempt_id = ?, last_sent_at = ?, last_error = ?, reconcile_at = ?,
			reconcile_count = ?, succeeded_at = ?, updated_at = ?, version = ?
			WHERE store_id = ? AND id = ? AND version = ?`,
			r.Amount, r.Currency, r.Reason, metadata, r.Status, r.Attempts, r.AttemptID, micros(r.LastSentAt),
			lastError, micros(r.ReconcileAt), r.ReconcileCount, micros(r.SucceededAt), micros(r.UpdatedAt),
			expectedVersion+1, r.StoreID, r.ID, expectedVersion)
		if err != nil {
			return mapErr(err)
		}
		return versioned(ctx, w, res, "refunds", r.StoreID, r.ID)
	})
	if err == nil {
		r.Version = expectedVersion + 1
	}
	return err
}

func (q *queries) RefundDelete(ctx context.Context, storeID, id string, expectedVersion int64) error {
	return q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `DELETE FROM refunds WHERE store_id = ? AND id = ? AND version = ?`, storeID, id, expectedVersion)
		if err != nil {
			return mapErr(err)
		}
		return versioned(ctx, w, res, "refunds", storeID, id)
	})
}

func (q *queries) RefundListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.Refund, error) {
	rows, err := q.r.QueryContext(ctx, `SELECT `+refundColumns+` FROM refunds
		WHERE status = 'pending' AND reconcile_at > 0 AND reconcile_at <= ?
		ORDER BY reconcile_at, seq LIMIT ?`, micros(now), limit)
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, scanRefund)
}
