package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/core"
)

func (q *queries) IdempotencyBegin(ctx context.Context, p storage.IdempotencyBeginParams) (*storage.IdempotencyRecord, bool, error) {
	var rec *storage.IdempotencyRecord
	var began bool
	err := q.write(ctx, func(w querier) error {
		b := &pgx.Batch{}
		// One statement decides, so that of concurrent runs exactly one
		// locks the key: a conflicting row is overwritten only when it
		// expired, or when its run was abandoned under the same request.
		// When it is not, ON CONFLICT still locks it until the end of the
		// transaction, so the SELECT after it reads the row that won.
		b.Queue(`INSERT INTO idempotency_keys AS k
				(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, 0, '', $6, $7)
			ON CONFLICT (store_id, key) DO UPDATE SET
				fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
				locked_until = excluded.locked_until, status = 0, body = '',
				recovery_point = CASE WHEN k.expires_at <= $6 THEN '' ELSE k.recovery_point END,
				object_id = CASE WHEN k.expires_at <= $6 THEN '' ELSE k.object_id END,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE k.expires_at <= $6
				OR (k.status = 0 AND k.locked_until <= $6 AND k.fingerprint = excluded.fingerprint)`,
			p.StoreID, p.Key, p.Fingerprint, p.LockToken, ts(p.LockedUntil), ts(p.Now), ts(p.ExpiresAt),
		).Exec(func(tag pgconn.CommandTag) error {
			began = tag.RowsAffected() == 1
			return nil
		})
		b.Queue(`SELECT `+core.IdempotencyColumns+`
			FROM idempotency_keys WHERE store_id = $1 AND key = $2`, p.StoreID, p.Key,
		).QueryRow(func(row pgx.Row) error {
			var err error
			rec, err = q.ScanIdempotency(row)
			return err
		})
		return mapErr(w.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return nil, false, err
	}
	return rec, began, nil
}

func (q *queries) IdempotencyRelease(ctx context.Context, storeID, key, lockToken string) error {
	return q.write(ctx, func(w querier) error {
		// A run that committed a step keeps it for the next run to resume.
		tag, err := w.Exec(ctx, `WITH kept AS (
				UPDATE idempotency_keys SET locked_until = '-infinity'
				WHERE store_id = $1 AND key = $2 AND lock_token = $3 AND status = 0 AND recovery_point <> ''
				RETURNING 1)
			DELETE FROM idempotency_keys
			WHERE store_id = $1 AND key = $2 AND lock_token = $3 AND status = 0 AND recovery_point = ''
				AND NOT EXISTS (SELECT 1 FROM kept)`, storeID, key, lockToken)
		if err != nil || tag.RowsAffected() > 0 {
			return mapErr(err)
		}
		var n int
		if err := w.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys
			WHERE store_id = $1 AND key = $2 AND lock_token = $3 AND status = 0`, storeID, key, lockToken).Scan(&n); err != nil {
			return mapErr(err)
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		return nil
	})
}
