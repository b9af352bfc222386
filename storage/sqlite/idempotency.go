package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/core"
)

func (q *queries) IdempotencyBegin(ctx context.Context, p storage.IdempotencyBeginParams) (*storage.IdempotencyRecord, bool, error) {
	var rec *storage.IdempotencyRecord
	err := q.write(ctx, func(w querier) error {
		now := micros(p.Now)
		// One statement decides, so that of concurrent runs exactly one
		// locks the key: a conflicting row is overwritten only when it
		// expired, or when its run was abandoned under the same request.
		_, err := w.ExecContext(ctx, `INSERT INTO idempotency_keys
			(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, 0, x'', ?, ?)
			ON CONFLICT (store_id, key) DO UPDATE SET
				fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
				locked_until = excluded.locked_until, status = 0, body = x'',
				recovery_point = CASE WHEN idempotency_keys.expires_at <= ? THEN '' ELSE idempotency_keys.recovery_point END,
				object_id = CASE WHEN idempotency_keys.expires_at <= ? THEN '' ELSE idempotency_keys.object_id END,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE idempotency_keys.expires_at <= ?
				OR (idempotency_keys.status = 0 AND idempotency_keys.locked_until <= ?
					AND idempotency_keys.fingerprint = excluded.fingerprint)`,
			p.StoreID, p.Key, p.Fingerprint, p.LockToken, micros(p.LockedUntil), now, micros(p.ExpiresAt), now, now, now, now)
		if err != nil {
			return mapErr(err)
		}
		rec, err = q.ScanIdempotency(w.QueryRowContext(ctx, `SELECT `+core.IdempotencyColumns+`
			FROM idempotency_keys WHERE store_id = ? AND key = ?`, p.StoreID, p.Key))
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return rec, !rec.Completed() && rec.LockToken == p.LockToken, nil
}

func (q *queries) IdempotencyRelease(ctx context.Context, storeID, key, lockToken string) error {
	return q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `DELETE FROM idempotency_keys
			WHERE store_id = ? AND key = ? AND lock_token = ? AND status = 0 AND recovery_point = ''`, storeID, key, lockToken)
		if err := affectedOne(res, err); !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		res, err = w.ExecContext(ctx, `UPDATE idempotency_keys SET locked_until = 0
			WHERE store_id = ? AND key = ? AND lock_token = ? AND status = 0`, storeID, key, lockToken)
		return affectedOne(res, err)
	})
}

// affectedOne maps a statement that changed no row to ErrNotFound.
func affectedOne(res sql.Result, err error) error {
	if err != nil {
		return mapErr(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return mapErr(err)
	}
	if n == 0 {
		return storage.ErrNotFound
	}
	return nil
}
