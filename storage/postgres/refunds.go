package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

const refundColumns = `id, store_id, payment_intent_id, amount, currency, reason, metadata, status, attempts,
	attempt_id, last_sent_at, last_error, reconcile_at, reconcile_count, succeeded_at, created_at, updated_at, version`

// scanRefund reads a refund back as the SQLite adapter does: metadata is
// never nil (an empty object reads as an empty map).
func scanRefund(row scanner) (*keelpay.Refund, error) {
	var r keelpay.Refund
	err := row.Scan(&r.ID, &r.StoreID, &r.PaymentIntentID, &r.Amount, &r.Currency, &r.Reason, &r.Metadata, &r.Status,
		&r.Attempts, &r.AttemptID, tsDst(&r.LastSentAt), &r.LastError, tsDst(&r.ReconcileAt), &r.ReconcileCount,
		tsDst(&r.SucceededAt), tsDst(&r.CreatedAt), tsDst(&r.UpdatedAt), &r.Version)
	if err != nil {
		return nil, mapErr(err)
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	return &r, nil
}

func (q *queries) RefundInsert(ctx context.Context, r *keelpay.Refund) error {
	return q.write(ctx, func(w querier) error {
		_, err := w.Exec(ctx, `INSERT INTO refunds (`+refundColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
			r.ID, r.StoreID, r.PaymentIntentID, r.Amount, r.Currency, r.Reason, metadataArg(r.Metadata), r.Status, r.Attempts,
			r.AttemptID, ts(r.LastSentAt), r.LastError, ts(r.ReconcileAt), r.ReconcileCount,
			ts(r.SucceededAt), ts(r.CreatedAt), ts(r.UpdatedAt), r.Version)
		return mapErr(err)
	})
}

func (q *queries) RefundGet(ctx context.Context, storeID, id string) (*keelpay.Refund, error) {
	return scanRefund(q.q.QueryRow(ctx, `SELECT `+refundColumns+` FROM refunds WHERE store_id = $1 AND id = $2`, storeID, id))
}

func (q *queries) RefundGetByIntent(ctx context.Context, storeID, paymentIntentID string) (*keelpay.Refund, error) {
	return scanRefund(q.q.QueryRow(ctx, `SELECT `+refundColumns+` FROM refunds
		WHERE store_id = $1 AND payment_intent_id = $2`, storeID, paymentIntentID))
}

func (q *queries) RefundUpdate(ctx context.Context, r *keelpay.Refund, expectedVersion int64) error {
	err := q.write(ctx, func(w querier) error {
		return versioned(ctx, w, `UPDATE refunds SET amount = $1, currency = $2, reason = $3, metadata = $4,
			status = $5, attempts = $6, attempt_id = $7, last_sent_at = $8, last_error = $9, reconcile_at = $10,
			reconcile_count = $11, succeeded_at = $12, updated_at = $13, version = $14::bigint + 1
			WHERE store_id = $15 AND id = $16 AND version = $14`,
			`SELECT FROM refunds WHERE store_id = $15 AND id = $16`,
			[]any{r.Amount, r.Currency, r.Reason, metadataArg(r.Metadata), r.Status, r.Attempts, r.AttemptID,
				ts(r.LastSentAt), r.LastError, ts(r.ReconcileAt), r.ReconcileCount, ts(r.SucceededAt), ts(r.UpdatedAt),
				expectedVersion, r.StoreID, r.ID},
			fmt.Errorf("%w: refund %s is no longer at version %d", storage.ErrConflict, r.ID, expectedVersion))
	})
	if err != nil {
		return err
	}
	r.Version = expectedVersion + 1
	return nil
}

func (q *queries) RefundDelete(ctx context.Context, storeID, id string, expectedVersion int64) error {
	return q.write(ctx, func(w querier) error {
		return versioned(ctx, w, `DELETE FROM refunds WHERE store_id = $1 AND id = $2 AND version = $3`,
			`SELECT FROM refunds WHERE store_id = $1 AND id = $2`,
			[]any{storeID, id, expectedVersion},
			fmt.Errorf("%w: refund %s is no longer at version %d", storage.ErrConflict, id, expectedVersion))
	})
}

func (q *queries) RefundListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.Refund, error) {
	rows, err := q.q.Query(ctx, `SELECT `+refundColumns+` FROM refunds
		WHERE status = 'pending' AND reconcile_at <> '-infinity' AND reconcile_at <= $1
		ORDER BY reconcile_at, seq LIMIT $2`, ts(now), limit)
	return collect(rows, err, scanRefund)
}
