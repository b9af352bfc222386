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

// StoreWatcher is implemented by a Storage that can tell a cache of stores
// when what it read may no longer be current. Its epoch moves after every
// store change that commits in this process (before the change's WithTx or
// write returns), and, on a database that several processes share, when a
// change committed by another process is announced. stores.Service keeps
// its cache of authenticated keys only on a Storage that implements it.
//
// A store read after StoreEpoch returned (e, true) may be served from a
// cache for as long as StoreEpoch returns (e, true). While ok is false
// (the storage cannot hear of other processes' changes: not yet connected,
// connection lost, reconnecting) nothing may be served from a cache; when
// it is true again the epoch has moved, so what was cached before is gone.
type StoreWatcher interface {
	StoreEpoch() (epoch uint64, ok bool)
}
