package storage

import (
	"context"

	"github.com/keelpay/keelpay"
)

// StoreQueries reads and writes stores.
type StoreQueries interface {
	// StoreInsert adds a store. ErrDuplicate when its client id,
	// publishable key or secret key hash is taken.
	StoreInsert(ctx context.Context, s *keelpay.Store) error
	// StoreGetByID returns a store, or ErrNotFound.
	StoreGetByID(ctx context.Context, id string) (*keelpay.Store, error)
	// StoreGetByClientID returns the store bound to an application, or
	// ErrNotFound.
	StoreGetByClientID(ctx context.Context, clientID string) (*keelpay.Store, error)
	// StoreGetBySecretKeyHash returns the store whose secret key has this
	// SHA-256 hash, or ErrNotFound.
	StoreGetBySecretKeyHash(ctx context.Context, hash []byte) (*keelpay.Store, error)
	// StoreGetByPublishableKey returns the store with this publishable key,
	// or ErrNotFound.
	StoreGetByPublishableKey(ctx context.Context, key string) (*keelpay.Store, error)
	// StoreUpdate writes s when the stored version is still
	// expectedVersion, setting s.Version to expectedVersion+1. ErrConflict
	// when the version moved, ErrNotFound when there is no such store,
	// ErrDuplicate when the new client id is bound to another store.
	StoreUpdate(ctx context.Context, s *keelpay.Store, expectedVersion int64) error
}
