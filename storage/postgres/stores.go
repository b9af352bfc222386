package postgres

import (
	"context"
	"fmt"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

const storeColumns = `id, client_id, client_secret_hash, merchant_id, currency, publishable_key,
	secret_key_hash, webhook_url, webhook_secret, version, created_at, updated_at`

func scanStore(row scanner) (*keelpay.Store, error) {
	var s keelpay.Store
	err := row.Scan(&s.ID, &s.ClientID, &s.ClientSecretHash, &s.MerchantID, &s.Currency, &s.PublishableKey,
		&s.SecretKeyHash, &s.WebhookURL, &s.WebhookSecret, &s.Version, tsDst(&s.CreatedAt), tsDst(&s.UpdatedAt))
	if err != nil {
		return nil, mapErr(err)
	}
	return &s, nil
}

func (q *queries) StoreInsert(ctx context.Context, s *keelpay.Store) error {
	defer q.storesWritten()
	return q.write(ctx, func(w querier) error {
		_, err := w.Exec(ctx, `INSERT INTO stores (`+storeColumns+`, client_secret)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, '')`,
			s.ID, s.ClientID, s.ClientSecretHash, s.MerchantID, s.Currency, s.PublishableKey,
			s.SecretKeyHash, s.WebhookURL, q.db.codec.Seal(atrest.StoreWebhookSecret, s.WebhookSecret, s.ID), s.Version, ts(s.CreatedAt), ts(s.UpdatedAt))
		return mapErr(err)
	})
}

func (q *queries) storeGet(ctx context.Context, column string, value any) (*keelpay.Store, error) {
	s, err := scanStore(q.q.QueryRow(ctx, `SELECT `+storeColumns+` FROM stores WHERE `+column+` = $1`, value))
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
	defer q.storesWritten()
	err := q.write(ctx, func(w querier) error {
		return versioned(ctx, w, `UPDATE stores SET client_id = $1, client_secret_hash = $2, merchant_id = $3,
			currency = $4, publishable_key = $5, secret_key_hash = $6, webhook_url = $7, webhook_secret = $8,
			version = $9::bigint + 1, updated_at = $10 WHERE id = $11 AND version = $9`,
			`SELECT FROM stores WHERE id = $11`,
			[]any{s.ClientID, s.ClientSecretHash, s.MerchantID, s.Currency, s.PublishableKey, s.SecretKeyHash,
				s.WebhookURL, q.db.codec.Seal(atrest.StoreWebhookSecret, s.WebhookSecret, s.ID), expectedVersion, ts(s.UpdatedAt), s.ID},
			fmt.Errorf("%w: store %s is no longer at version %d", storage.ErrConflict, s.ID, expectedVersion))
	})
	if err != nil {
		return err
	}
	s.Version = expectedVersion + 1
	return nil
}

// versioned runs write, an UPDATE or DELETE conditional on a row's version
// or state, and tells a row that did not qualify (conflict) from a missing
// one (ErrNotFound, when the exists query finds nothing). One statement:
// the write waits for the row's lock and checks its newest version, so of
// concurrent writes that expect one version exactly one succeeds.
func versioned(ctx context.Context, w querier, write, exists string, args []any, conflict error) error {
	var wrote, found bool
	err := w.QueryRow(ctx, `WITH w AS (`+write+` RETURNING 1)
		SELECT EXISTS (SELECT FROM w), EXISTS (`+exists+`)`, args...).Scan(&wrote, &found)
	switch {
	case err != nil:
		return mapErr(err)
	case wrote:
		return nil
	case !found:
		return storage.ErrNotFound
	default:
		return conflict
	}
}
