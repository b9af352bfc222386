package stores

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// KeyCacheSizeDefault is the default of Config.KeyCacheSize.
const KeyCacheSizeDefault = 1000

// keyCache remembers which store a key authenticates, so that a request
// does not read (and open the sealed webhook secret of) its store again.
// It serves only what was read in the storage's current epoch while the
// storage hears every store change (see [storage.StoreWatcher]): any
// store change, in this process or, on PostgreSQL, in another, empties it,
// and while changes cannot be heard it neither serves nor keeps anything.
// It holds at most max stores; one more evicts one at random. Keys it
// does not know (a bad key) are never kept. Concurrent misses of one key
// share one read.
type keyCache[K comparable] struct {
	watch  storage.StoreWatcher
	max    int
	name   func(K) string // k's key in flight
	flight singleflight.Group

	mu    sync.RWMutex
	epoch uint64 // the epoch in which every store of m was read
	m     map[K]*keelpay.Store
}

func newKeyCache[K comparable](watch storage.StoreWatcher, max int, name func(K) string) *keyCache[K] {
	return &keyCache[K]{watch: watch, max: max, name: name, m: map[K]*keelpay.Store{}}
}

// load returns the store cached under k or, on a miss, the one read
// returns, and keeps it when the cache may. Concurrent misses of k in one
// epoch share one read, so that an answer is never older than the cache's
// own would be; the read outlives a caller that gives up (each waits only
// as long as its own ctx), and each caller gets its own copy. Without a
// cache (c nil), or while changes cannot be heard, it only reads.
func (c *keyCache[K]) load(ctx context.Context, k K, read func(context.Context) (*keelpay.Store, error)) (*keelpay.Store, error) {
	st, epoch, keep := c.get(k)
	if st != nil {
		return st, nil
	}
	return c.miss(ctx, k, epoch, keep, read)
}

// cached returns a copy of the store cached under k, when the cache may
// serve it, or nil: a caller that builds its read only on a miss (see
// load) makes no allocation for a hit but the copy.
func (c *keyCache[K]) cached(k K) *keelpay.Store {
	st, _, _ := c.get(k)
	return st
}

// miss is load after get found nothing.
func (c *keyCache[K]) miss(ctx context.Context, k K, epoch uint64, keep bool, read func(context.Context) (*keelpay.Store, error)) (*keelpay.Store, error) {
	if !keep {
		return read(ctx)
	}
	ch := c.flight.DoChan(strconv.FormatUint(epoch, 36)+" "+c.name(k), func() (any, error) {
		st, err := read(context.WithoutCancel(ctx))
		if err == nil {
			c.put(k, epoch, st)
		}
		return st, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return clone(r.Val.(*keelpay.Store)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// clone is a copy of st that its holder may change: one allocation for
// the store and a hash of the usual size.
func clone(st *keelpay.Store) *keelpay.Store {
	if st.SecretKeyHash == nil || len(st.SecretKeyHash) > sha256.Size {
		cp := *st
		cp.SecretKeyHash = bytes.Clone(st.SecretKeyHash)
		return &cp
	}
	cp := &struct {
		st   keelpay.Store
		hash [sha256.Size]byte
	}{st: *st}
	cp.st.SecretKeyHash = cp.hash[:copy(cp.hash[:], st.SecretKeyHash):len(st.SecretKeyHash)]
	return &cp.st
}

// get returns a copy of the store cached under k, when the cache may
// serve. Otherwise it returns nil and, when a store read now may be kept,
// the epoch to hand to put with it.
func (c *keyCache[K]) get(k K) (st *keelpay.Store, epoch uint64, keep bool) {
	if c == nil {
		return nil, 0, false
	}
	epoch, live := c.watch.StoreEpoch()
	if !live {
		return nil, 0, false
	}
	c.mu.RLock()
	if c.epoch == epoch {
		st = c.m[k]
	}
	c.mu.RUnlock()
	if st != nil {
		return clone(st), 0, false
	}
	return nil, epoch, true
}

// put keeps a copy of st, read after get returned epoch, unless the epoch
// has moved since (the store may have changed after it was read) or
// changes can no longer be heard.
func (c *keyCache[K]) put(k K, epoch uint64, st *keelpay.Store) {
	cp := clone(st)
	c.mu.Lock()
	defer c.mu.Unlock()
	if now, live := c.watch.StoreEpoch(); !live || now != epoch {
		return
	}
	if c.epoch != epoch {
		clear(c.m)
		c.epoch = epoch
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		for old := range c.m { // map order is random
			delete(c.m, old)
			break
		}
	}
	c.m[k] = cp
}

// len is the number of stores cached in the current epoch, for tests.
func (c *keyCache[K]) len() int {
	if c == nil {
		return 0
	}
	epoch, live := c.watch.StoreEpoch()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !live || c.epoch != epoch {
		return 0
	}
	return len(c.m)
}
