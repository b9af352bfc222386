package sqlite

import (
	"context"
	"fmt"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

const storeColumns = `id, client_id, client_secret_hash, merchant_id, currency, publishable_key,
	secret_key_hash, webhook_url, webhook_secret, version, created_at, updated_at`

func scanStore(row interface{ Scan(...any) error }) (*keelpay.Store, error) {
	var s keelpay.Store
	var created, updated int64
	err := row.Scan(&s.ID, &s.ClientID, &s.ClientSecretHash, &s.MerchantID, &s.Currency, &s.PublishableKey,
		&s.SecretKeyHash, &s.WebhookURL, &s.WebhookSecret, &s.Version, &created, &updated)
	if err != nil {
		return nil, mapErr(err)
	}
	s.CreatedAt, s.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &s, nil
}

func (q *queries) StoreInsert(ctx context.Context, s *keelpay.Store) error {
	return q.write(ctx, func(w querier) error {
		q.db.storesWritten = true
		_, err := w.ExecContext(ctx, `INSERT INTO stores (`+storeColumns+`, client_secret)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '')`,
			s.ID, s.ClientID, s.ClientSecretHash, s.MerchantID, s.Currency, s.PublishableKey,
			s.SecretKeyHash, s.WebhookURL, q.db.codec.Seal(atrest.StoreWebhookSecret, s.WebhookSecret, s.ID), s.Version, micros(s.CreatedAt), micros(s.UpdatedAt))
		return mapErr(err)
	})
}

func (q *queries) storeGet(ctx context.Context, column string, value any) (*keelpay.Store, error) {
	s, err := scanStore(q.r.QueryRowContext(ctx, `SELECT `+storeColumns+` FROM stores WHERE `+column+` = ?`, value))
	if err != nil {
		return nil, err
	}
	if err := q.db.codec.OpenStore(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (q *queries) StoreGetByID(ctx context.Context, id string) (*keelpay.Store, error) {
	return q.storeGet(ctx, "id", id)
}

func (q *queries) StoreGetByClientID(ctx context.Context, clientID string) (*keelpay.Store, error) {
	return q.storeGet(ctx, "client_id", clientID)
}

func (q *queries) StoreGetBySecretKeyHash(ctx context.Context, hash []byte) (*keelpay.Store, error) {
	return q.storeGet(ctx, "secret_key_hash", hash)
}

func (q *queries) StoreGetByPublishableKey(ctx context.Context, key string) (*keelpay.Store, error) {
	return q.storeGet(ctx, "publishable_key", key)
}

func (q *queries) StoreUpdate(ctx context.Context, s *keelpay.Store, expectedVersion int64) error {
	return q.write(ctx, func(w querier) error {
		q.db.storesWritten = true
		res, err := w.ExecContext(ctx, `UPDATE stores SET client_id = ?, client_secret_hash = ?, merchant_id = ?,
			currency = ?, publishable_key = ?, secret_key_hash = ?, webhook_url = ?, webhook_secret = ?,
			version = ?, updated_at = ? WHERE id = ? AND version = ?`,
			s.ClientID, s.ClientSecretHash, s.MerchantID, s.Currency, s.PublishableKey, s.SecretKeyHash,
			s.WebhookURL, q.db.codec.Seal(atrest.StoreWebhookSecret, s.WebhookSecret, s.ID), expectedVersion+1, micros(s.UpdatedAt), s.ID, expectedVersion)
		if err != nil {
			return mapErr(err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return mapErr(err)
		} else if n == 0 {
			var exists int
			if err := w.QueryRowContext(ctx, `SELECT count(*) FROM stores WHERE id = ?`, s.ID).Scan(&exists); err != nil {
				return mapErr(err)
			}
			if exists == 0 {
				return storage.ErrNotFound
			}
			return fmt.Errorf("%w: store %s is no longer at version %d", storage.ErrConflict, s.ID, expectedVersion)
		}
		s.Version = expectedVersion + 1
		return nil
	})
}
