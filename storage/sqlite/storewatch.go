package sqlite

import (
	"path/filepath"
	"sync"

	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/storewatch"
)

var _ storage.StoreWatcher = (*DB)(nil)

// StoreEpoch implements [storage.StoreWatcher]. A SQLite file belongs to
// one process, so every store change is made here: the epoch moves when a
// transaction that wrote a store has ended, before its WithTx returns, and
// changes are always heard (ok is always true). DBs open on the same file
// in this process share one epoch.
func (db *DB) StoreEpoch() (uint64, bool) { return db.epoch.e.Load() }

// fileEpoch is the store epoch of one database file, shared by the DBs of
// this process that have it open.
type fileEpoch struct {
	e    storewatch.Epoch
	refs int
}

var fileEpochs = struct {
	sync.Mutex
	m map[string]*fileEpoch
}{m: map[string]*fileEpoch{}}

// epochKey names a database file for fileEpochs: its absolute path with
// symbolic links resolved, or the path as given when that fails.
func epochKey(path string) string {
	if p, err := filepath.Abs(path); err == nil {
		path = p
	}
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	return path
}

// acquireEpoch returns the epoch of the file at key, live from the start.
func acquireEpoch(key string) *fileEpoch {
	fileEpochs.Lock()
	defer fileEpochs.Unlock()
	fe := fileEpochs.m[key]
	if fe == nil {
		fe = &fileEpoch{}
		fe.e.SetLive(true)
		fileEpochs.m[key] = fe
	}
	fe.refs++
	return fe
}

// releaseEpoch forgets the epoch of the file at key when no DB has it
// open any more.
func releaseEpoch(key string) {
	fileEpochs.Lock()
	defer fileEpochs.Unlock()
	if fe := fileEpochs.m[key]; fe != nil {
		if fe.refs--; fe.refs == 0 {
			delete(fileEpochs.m, key)
		}
	}
}
