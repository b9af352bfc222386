package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/keelpay/keelpay/storage"
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
		rec, err = q.scanIdempotency(w.QueryRowContext(ctx, `SELECT `+idempotencyColumns+`
			FROM idempotency_keys WHERE store_id = ? AND key = ?`, p.StoreID, p.Key))
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return rec, !rec.Completed() && rec.LockToken == p.LockToken, nil
}

func (q *queries) IdempotencyGet(ctx context.Context, storeID, key string) (*storage.IdempotencyRecord, error) {
	return q.scanIdempotency(q.r.QueryRowContext(ctx, `SELECT `+idempotencyColumns+`
		FROM idempotency_keys WHERE store_id = ? AND key = ?`, storeID, key))
}

const idempotencyColumns = `store_id, key, fingerprint, lock_token, locked_until,
	status, body, created_at, expires_at, recovery_point, object_id`

func scanIdempotencyRaw(row scanner) (*storage.IdempotencyRecord, error) {
	var r storage.IdempotencyRecord
	var lockedUntil, created, expires int64
	err := row.Scan(&r.StoreID, &r.Key, &r.Fingerprint, &r.LockToken, &lockedUntil,
		&r.Status, &r.Body, &created, &expires, &r.RecoveryPoint, &r.ObjectID)
	if err != nil {
		return nil, mapErr(err)
	}
	r.LockedUntil = fromMicros(lockedUntil)
	r.CreatedAt = fromMicros(created)
	r.ExpiresAt = fromMicros(expires)
	if len(r.Body) == 0 {
		r.Body = nil
	}
	return &r, nil
}

func (q *queries) IdempotencyComplete(ctx context.Context, p storage.IdempotencyCompleteParams) error {
	if p.Status <= 0 {
		return fmt.Errorf("sqlite: idempotency complete: status %d is not a response status", p.Status)
	}
	body := q.db.codec.SealBody(p.StoreID, p.Key, p.Body)
	return q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE idempotency_keys SET status = ?, body = ?, locked_until = 0
			WHERE store_id = ? AND key = ? AND lock_token = ? AND status = 0`,
			p.Status, body, p.StoreID, p.Key, p.LockToken)
		if err := affectedOne(res, err); !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		// Already completed by this run (inside its last change's
		// transaction): nothing to do.
		var n int
		err = w.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys
			WHERE store_id = ? AND key = ? AND lock_token = ? AND status > 0`, p.StoreID, p.Key, p.LockToken).Scan(&n)
		if err != nil {
			return mapErr(err)
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		return nil
	})
}

func (q *queries) IdempotencyProgress(ctx context.Context, p storage.IdempotencyProgressParams) error {
	if p.Status > 0 {
		body := q.db.codec.SealBody(p.StoreID, p.Key, p.Body)
		return q.write(ctx, func(w querier) error {
			res, err := w.ExecContext(ctx, `UPDATE idempotency_keys
				SET recovery_point = ?, object_id = ?, status = ?, body = ?, locked_until = 0
				WHERE store_id = ? AND key = ? AND lock_token = ? AND status = 0`,
				p.RecoveryPoint, p.ObjectID, p.Status, body, p.StoreID, p.Key, p.LockToken)
			return affectedOne(res, err)
		})
	}
	return q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `UPDATE idempotency_keys SET recovery_point = ?, object_id = ?
			WHERE store_id = ? AND key = ? AND lock_token = ? AND status = 0`,
			p.RecoveryPoint, p.ObjectID, p.StoreID, p.Key, p.LockToken)
		return affectedOne(res, err)
	})
}

func (q *queries) IdempotencyTake(ctx context.Context, p storage.IdempotencyTakeParams) (bool, error) {
	body, lockedUntil := []byte{}, micros(p.LockedUntil)
	if p.Status > 0 {
		body, lockedUntil = q.db.codec.SealBody(p.StoreID, p.Key, p.Body), 0
	}
	var taken bool
	err := q.write(ctx, func(w querier) error {
		now := micros(p.Now)
		res, err := w.ExecContext(ctx, `INSERT INTO idempotency_keys
			(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at, recovery_point, object_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (store_id, key) DO UPDATE SET
				fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
				locked_until = excluded.locked_until, status = excluded.status, body = excluded.body,
				recovery_point = excluded.recovery_point, object_id = excluded.object_id,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE idempotency_keys.expires_at <= ?
				OR (idempotency_keys.status = 0 AND idempotency_keys.locked_until <= ?
					AND idempotency_keys.fingerprint = excluded.fingerprint AND idempotency_keys.recovery_point = '')`,
			p.StoreID, p.Key, p.Fingerprint, p.LockToken, lockedUntil, max(p.Status, 0), body, now, micros(p.ExpiresAt),
			p.RecoveryPoint, p.ObjectID, now, now)
		if err != nil {
			return mapErr(err)
		}
		n, err := res.RowsAffected()
		taken = n == 1
		return mapErr(err)
	})
	return taken, err
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

func (q *queries) IdempotencyDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if due, err := q.anyDue(ctx, `SELECT 1 FROM idempotency_keys WHERE expires_at <= ? LIMIT 1`, micros(now)); !due {
		return 0, err
	}
	var n int64
	err := q.write(ctx, func(w querier) error {
		res, err := w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE rowid IN (
			SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)`, micros(now), limit)
		if err != nil {
			return mapErr(err)
		}
		n, err = res.RowsAffected()
		return mapErr(err)
	})
	return int(n), err
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

// scanIdempotency reads a record and opens its sealed body.
func (q *queries) scanIdempotency(row scanner) (*storage.IdempotencyRecord, error) {
	r, err := scanIdempotencyRaw(row)
	if err != nil {
		return nil, err
	}
	if r.Body != nil {
		if r.Body, err = q.db.codec.OpenBody(r.StoreID, r.Key, r.Body); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// anyDue reports whether query, a read that selects at most one row,
// finds one. Outside a transaction it is read on a reader first, so that a
// sweep that finds nothing (most of them) costs the writer nothing; inside
// one it reports true, and the sweep's own statements decide.
func (q *queries) anyDue(ctx context.Context, query string, args ...any) (bool, error) {
	if q.w != nil {
		return true, nil
	}
	var one any
	err := q.r.QueryRowContext(ctx, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, mapErr(err)
	}
	return true, nil
}
