package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/keelpay/keelpay/storage"
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
		b.Queue(`SELECT `+idempotencyColumns+`
			FROM idempotency_keys WHERE store_id = $1 AND key = $2`, p.StoreID, p.Key,
		).QueryRow(func(row pgx.Row) error {
			var err error
			rec, err = q.scanIdempotency(row)
			return err
		})
		return mapErr(w.SendBatch(ctx, b).Close())
	})
	if err != nil {
		return nil, false, err
	}
	return rec, began, nil
}

func (q *queries) IdempotencyGet(ctx context.Context, storeID, key string) (*storage.IdempotencyRecord, error) {
	return q.scanIdempotency(q.q.QueryRow(ctx, `SELECT `+idempotencyColumns+`
		FROM idempotency_keys WHERE store_id = $1 AND key = $2`, storeID, key))
}

const idempotencyColumns = `store_id, key, fingerprint, lock_token, locked_until,
	status, body, created_at, expires_at, recovery_point, object_id`

func scanIdempotencyRaw(row scanner) (*storage.IdempotencyRecord, error) {
	var r storage.IdempotencyRecord
	err := row.Scan(&r.StoreID, &r.Key, &r.Fingerprint, &r.LockToken, tsDst(&r.LockedUntil),
		&r.Status, &r.Body, tsDst(&r.CreatedAt), tsDst(&r.ExpiresAt), &r.RecoveryPoint, &r.ObjectID)
	if err != nil {
		return nil, mapErr(err)
	}
	if len(r.Body) == 0 {
		r.Body = nil
	}
	return &r, nil
}

func (q *queries) IdempotencyComplete(ctx context.Context, p storage.IdempotencyCompleteParams) error {
	if p.Status <= 0 {
		return fmt.Errorf("postgres: idempotency complete: status %d is not a response status", p.Status)
	}
	body := q.db.codec.SealBody(p.StoreID, p.Key, p.Body)
	return q.write(ctx, func(w querier) error {
		// The second branch: already completed by this run (inside its
		// last change's transaction), which changes nothing.
		var n int
		err := w.QueryRow(ctx, `WITH done AS (
				UPDATE idempotency_keys SET status = $1, body = $2, locked_until = '-infinity'
				WHERE store_id = $3 AND key = $4 AND lock_token = $5 AND status = 0 RETURNING 1)
			SELECT (SELECT count(*) FROM done) + (SELECT count(*) FROM idempotency_keys
				WHERE store_id = $3 AND key = $4 AND lock_token = $5 AND status > 0)`,
			p.Status, body, p.StoreID, p.Key, p.LockToken).Scan(&n)
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
			tag, err := w.Exec(ctx, `UPDATE idempotency_keys
				SET recovery_point = $1, object_id = $2, status = $3, body = $4, locked_until = '-infinity'
				WHERE store_id = $5 AND key = $6 AND lock_token = $7 AND status = 0`,
				p.RecoveryPoint, p.ObjectID, p.Status, body, p.StoreID, p.Key, p.LockToken)
			return affectedOne(tag, err)
		})
	}
	return q.write(ctx, func(w querier) error {
		tag, err := w.Exec(ctx, `UPDATE idempotency_keys SET recovery_point = $1, object_id = $2
			WHERE store_id = $3 AND key = $4 AND lock_token = $5 AND status = 0`,
			p.RecoveryPoint, p.ObjectID, p.StoreID, p.Key, p.LockToken)
		return affectedOne(tag, err)
	})
}

func (q *queries) IdempotencyTake(ctx context.Context, p storage.IdempotencyTakeParams) (bool, error) {
	body, lockedUntil := []byte{}, ts(p.LockedUntil)
	if p.Status > 0 {
		body, lockedUntil = q.db.codec.SealBody(p.StoreID, p.Key, p.Body), ts(time.Time{})
	}
	var taken bool
	err := q.write(ctx, func(w querier) error {
		tag, err := w.Exec(ctx, `INSERT INTO idempotency_keys AS k
				(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at, recovery_point, object_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (store_id, key) DO UPDATE SET
				fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
				locked_until = excluded.locked_until, status = excluded.status, body = excluded.body,
				recovery_point = excluded.recovery_point, object_id = excluded.object_id,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE k.expires_at <= $8
				OR (k.status = 0 AND k.locked_until <= $8 AND k.fingerprint = excluded.fingerprint AND k.recovery_point = '')`,
			p.StoreID, p.Key, p.Fingerprint, p.LockToken, lockedUntil, max(p.Status, 0), body, ts(p.Now), ts(p.ExpiresAt),
			p.RecoveryPoint, p.ObjectID)
		if err != nil {
			return mapErr(err)
		}
		taken = tag.RowsAffected() == 1
		return nil
	})
	return taken, err
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

func (q *queries) IdempotencyDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if due, err := q.anyDue(ctx, `SELECT 1 FROM idempotency_keys WHERE expires_at <= $1 LIMIT 1`, ts(now)); !due {
		return 0, err
	}
	var n int64
	err := q.write(ctx, func(w querier) error {
		// Rows another transaction holds (a key being taken over) are left
		// for the next call.
		tag, err := w.Exec(ctx, `DELETE FROM idempotency_keys k USING (
				SELECT store_id, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED) x
			WHERE k.store_id = x.store_id AND k.key = x.key`, ts(now), limit)
		n = tag.RowsAffected()
		return mapErr(err)
	})
	return int(n), err
}

// affectedOne maps a statement that changed no row to ErrNotFound.
func affectedOne(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
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
// finds one. Outside a transaction it is read first, so that a sweep that
// finds nothing (most of them) writes nothing; inside one it reports true,
// and the sweep's own statements decide.
func (q *queries) anyDue(ctx context.Context, query string, args ...any) (bool, error) {
	if q.inTx {
		return true, nil
	}
	var one int
	err := q.q.QueryRow(ctx, query, args...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, mapErr(err)
	}
	return true, nil
}
