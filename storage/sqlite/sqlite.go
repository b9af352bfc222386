package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/atrest"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// Config configures Open. The zero value of every field but Keyring and
// Path is its default.
type Config struct {
	// BusyTimeout is how long a connection waits for a lock held by
	// another process. Default BusyTimeoutDefault.
	BusyTimeout time.Duration
	// IdleTime is how long a connection goes unused before its memory
	// is given back: a reader connection idle that long is closed
	// (freeing its page cache, prepared statements and schema), and the
	// writer empties its page cache once it has changed no row for that
	// long (within twice that). The next use reads its pages again, from
	// the operating system's cache of the file. SQLite keeps this memory
	// outside the Go heap, where the Go runtime cannot return it.
	// Default IdleTimeDefault; negative keeps everything for the life of
	// the DB.
	IdleTime time.Duration
	// Keyring seals the secrets kept in the database (webhook secrets,
	// client secrets of card sessions and payment intents, stored
	// responses) and customers' personal data (names, emails, phones,
	// billing details), and opens them. Required: a database sealed under other
	// keys fails to open. See docs/security.md.
	Keyring *keyring.Keyring
	// MaxBatch is the most transactions committed together. Default
	// MaxBatchDefault.
	MaxBatch int
	// Path is the database file. Required.
	Path string
	// Readers is the size of the reader pool. Default
	// max(4, 2*GOMAXPROCS).
	Readers int
	// SkipMigrations leaves the schema alone: set it when the migrations
	// of [Migrations] are applied by a tool of your own. Default false:
	// Open applies those it has not seen, as [Migrate] does.
	SkipMigrations bool
}

// Defaults of Config.
const (
	BusyTimeoutDefault = 5 * time.Second
	IdleTimeDefault    = 15 * time.Second
	MaxBatchDefault    = 256
)

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = BusyTimeoutDefault
	}
	if c.IdleTime == 0 {
		c.IdleTime = IdleTimeDefault
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = MaxBatchDefault
	}
	if c.Readers <= 0 {
		c.Readers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	return c
}

// DB is an open SQLite database. It implements [storage.Storage].
type DB struct {
	*queries // the executor outside a transaction

	w       *sql.DB
	r       *sql.DB
	wconn   *sql.Conn   // the writer's one connection, used only by writeLoop
	wc      connQuerier // statements prepared on wconn
	rc      *stmtCache
	cfg     Config
	records core.Records // the mapping of rows, with the keyring's codec
	reqs    chan *txRequest
	closing chan struct{}
	done    chan struct{}
	once    sync.Once
	txs     atomic.Int64 // transactions committed
	commits atomic.Int64 // batches committed

	// epoch moves after every transaction that wrote a store (see
	// StoreEpoch); storesWritten marks such a transaction in the batch
	// being committed, and only the writer goroutine touches it.
	epoch         *fileEpoch
	epochKey      string
	storesWritten bool

	// claim is the CommitClaim installed (SetCommitClaim). eventsWritten
	// counts the events inserted by the batch being committed, and ride
	// is the claim made in it; only the writer goroutine touches them.
	claim         atomic.Pointer[commitClaim]
	eventsWritten int
	ride          *rideClaim
}

// commitClaim holds a storage.CommitClaim for an atomic.Pointer.
type commitClaim struct{ c storage.CommitClaim }

// rideClaim is a claim made in the batch being committed.
type rideClaim struct {
	c    storage.CommitClaim
	p    storage.DeliveryClaimParams
	jobs []*storage.DeliveryJob
}

var _ storage.CommitClaimer = (*DB)(nil)

// SetCommitClaim implements storage.CommitClaimer: each batch of
// transactions that inserted an event claims due deliveries with c before
// it commits (see commitTogether), so that the dispatcher gets them when
// the batch has committed, not one commit later.
func (db *DB) SetCommitClaim(c storage.CommitClaim) {
	if c == nil {
		db.claim.Store(nil)
		return
	}
	db.claim.Store(&commitClaim{c})
}

// Stats returns the transactions and commits made since Open. The writer
// commits the transactions that wait for it together, one commit (one
// fsync) for many.
func (db *DB) Stats() storage.Stats {
	return storage.Stats{Transactions: db.txs.Load(), Commits: db.commits.Load()}
}

var _ storage.Storage = (*DB)(nil)

// ErrClosed is returned by WithTx after Close.
var ErrClosed = errors.New("sqlite: database closed")

// Open opens (creating if needed) the database file and, unless
// Config.SkipMigrations, applies the migrations it has not seen.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg = cfg.WithDefaults()
	if cfg.Path == "" {
		return nil, errors.New("sqlite: Config.Path is required")
	}
	if cfg.Keyring == nil {
		return nil, fmt.Errorf("sqlite: %w", atrest.ErrNoKeyring)
	}
	codec := atrest.Codec{KR: cfg.Keyring}
	w, err := sql.Open("sqlite", dsn(cfg, false))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open writer: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if !cfg.SkipMigrations {
		if err := migrate(ctx, w); err != nil {
			w.Close()
			return nil, err
		}
	}
	if err := sealAtRest(ctx, w, codec); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", dsn(cfg, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	r.SetMaxOpenConns(cfg.Readers)
	r.SetMaxIdleConns(cfg.Readers)
	r.SetConnMaxIdleTime(max(cfg.IdleTime, 0))
	db := &DB{
		w:       w,
		r:       r,
		cfg:     cfg,
		records: core.Records{D: dialect{}, Codec: codec},
		reqs:    make(chan *txRequest),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	wconn, err := w.Conn(ctx)
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: writer connection: %w", mapErr(err))
	}
	db.wconn = wconn
	db.wc = connQuerier{conn: wconn, stmts: map[string]*prepared{}}
	db.rc = &stmtCache{db: r}
	db.queries = newQueries(db, poolQuerier{db.rc}, nil)
	db.epochKey = epochKey(cfg.Path)
	db.epoch = acquireEpoch(db.epochKey)
	go db.writeLoop()
	return db, nil
}

func dsn(cfg Config, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(cfg.BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	// Savepoints' statement journals and sorts stay in memory: on disk
	// they were most of the page writes of a payment, and they guard
	// nothing once the transaction commits (the WAL does that).
	q.Add("_pragma", "temp_store(MEMORY)")
	// What a change removes from a page (an erased customer's name, a
	// deleted card's token) is overwritten with zeros in that page, at no
	// extra I/O, rather than left in its free space.
	q.Add("_pragma", "secure_delete(FAST)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + cfg.Path + "?" + q.Encode()
}

// Ping reads the file's first page (the schema) on a reader connection: it
// fails when the file cannot be opened or read.
func (db *DB) Ping(ctx context.Context) error {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

// Close waits for the transactions already handed to the writer, then
// closes the database.
func (db *DB) Close() error {
	db.once.Do(func() {
		close(db.closing)
		releaseEpoch(db.epochKey)
	})
	<-db.done
	db.rc.close()
	db.wc.close()
	return errors.Join(db.wconn.Close(), db.r.Close(), db.w.Close())
}

// inTxKey marks the context of a transaction's fn, so that a nested
// WithTx fails at once instead of deadlocking.
type inTxKey struct{}

// txRequest is one WithTx call waiting for the writer.
type txRequest struct {
	ctx  context.Context
	fn   func(context.Context, storage.Executor) error
	err  error
	pan  any
	done chan struct{}
}

// WithTx runs fn in a transaction on the writer. Transactions that arrive
// while another commits are committed together, sharing one fsync; one
// that fails rolls back alone (see commitBatch), the others may then run
// again.
// Once fn started, WithTx waits for the commit even if ctx is canceled, so
// that a nil error always means committed and an error always means not.
func (db *DB) WithTx(ctx context.Context, fn func(ctx context.Context, tx storage.Executor) error) error {
	if ctx.Value(inTxKey{}) != nil {
		// The writer is running the enclosing fn and would wait for
		// itself forever.
		panic("sqlite: WithTx (or a write outside the tx executor) called inside a transaction; use the tx executor")
	}
	req := &txRequest{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case db.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-db.closing:
		return ErrClosed
	}
	<-req.done
	if req.pan != nil {
		panic(req.pan)
	}
	return req.err
}

// Commit makes the writes of b in one transaction on the writer (group
// commit, as WithTx), each write's error known as it is made.
func (db *DB) Commit(ctx context.Context, b *storage.Batch) error {
	if b.Len() == 0 {
		b.Committed()
		return nil
	}
	if err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error { return b.Apply(ctx, tx) }); err != nil {
		return err
	}
	b.Committed()
	return nil
}

func (db *DB) writeLoop() {
	defer close(db.done)
	batch := make([]*txRequest, 0, db.cfg.MaxBatch)
	// Every IdleTime the writer looks whether it changed any row since it
	// last looked; if not, it empties its page cache. Transactions that
	// change nothing (a background pass that finds nothing due) do not
	// keep it.
	var tick <-chan time.Time
	if db.cfg.IdleTime > 0 {
		t := time.NewTicker(db.cfg.IdleTime)
		defer t.Stop()
		tick = t.C
	}
	changes := int64(-1)
	for {
		select {
		case req := <-db.reqs:
			batch = append(batch[:0], req)
		case <-tick:
			changes = db.releaseWriterMemory(changes)
			continue
		case <-db.closing:
			return
		}
	drain:
		for len(batch) < db.cfg.MaxBatch {
			select {
			case req := <-db.reqs:
				batch = append(batch, req)
			default:
				break drain
			}
		}
		db.commitBatch(batch)
	}
}

// releaseWriterMemory empties the writer's page cache, which otherwise
// holds the pages its transactions touched (up to the cache size) for as
// long as the connection lives, when the writer changed no row since the
// count of changes it was given (-1: none yet). It returns the count now.
// Only the writer goroutine calls it, between transactions.
func (db *DB) releaseWriterMemory(since int64) int64 {
	ctx := context.Background()
	var n int64
	if err := db.wc.QueryRowContext(ctx, "SELECT total_changes()").Scan(&n); err != nil {
		return -1
	}
	if n == since {
		// A failure only leaves the cache as it was.
		_, _ = db.wc.ExecContext(ctx, "PRAGMA shrink_memory")
	}
	return n
}

// commitBatch commits the transactions of batch together. It first runs
// them one after the other in one transaction, none in a savepoint of its
// own: a savepoint copies every page a transaction changes into a journal
// in memory before the change, and with most transactions of a batch
// touching the same pages (the ends of the tables and indexes they append
// to, the status counts) that copying and the two statements around each
// transaction were a good part of the writer's work. When one of them
// fails (an error or a panic), the whole transaction is rolled back and
// every one is run again (storage.Storage allows it), each in a savepoint
// of its own, as before: the one that failed may have failed because of a
// change of one before it, which must commit before it is answered. So a
// failure costs the batch a second run, and no third.
func (db *DB) commitBatch(batch []*txRequest) {
	if rest, ok := db.commitTogether(batch); !ok {
		db.commitSavepoints(rest)
	}
}

// commitTogether runs the transactions of batch without savepoints and
// commits them. When one fails, it rolls everything back and returns
// those that ran or are still to run, unanswered, with ok false.
func (db *DB) commitTogether(batch []*txRequest) (rest []*txRequest, ok bool) {
	ctx := context.Background()
	w := db.wc
	if _, err := w.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		db.finish(batch, mapErr(err))
		return nil, true
	}
	q := newQueries(db, w, w)
	n := 0
	db.eventsWritten = 0
	for i, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.err = err
			continue
		}
		req.pan, req.err = runFn(context.WithValue(context.WithoutCancel(req.ctx), inTxKey{}, true), q, req.fn)
		if req.err != nil || req.pan != nil {
			// Its failure may come from a change of one before it, now
			// rolled back too: it is answered only once that change has
			// committed, so it runs again with the others.
			req.err, req.pan = nil, nil
			return append(db.rollBack(batch[:i]), batch[i:]...), false
		}
		n++
	}
	if n > 0 && db.eventsWritten > 0 && !db.claimInBatch(q) {
		// The claim left the transaction unusable: everything runs
		// again, in savepoints, without it.
		return db.rollBack(batch), false
	}
	db.commit(batch, n)
	return nil, true
}

// rollBack rolls back the batch's transaction after ran ran in it: those
// of ran canceled before they ran are answered now, and the others are
// returned, unanswered, to run again.
func (db *DB) rollBack(ran []*txRequest) (rest []*txRequest) {
	_, _ = db.wc.ExecContext(context.Background(), "ROLLBACK")
	var canceled []*txRequest
	for _, req := range ran {
		if req.err != nil {
			canceled = append(canceled, req)
		} else {
			rest = append(rest, req)
		}
	}
	db.finish(canceled, nil)
	return rest
}

// claimInBatch claims due deliveries with the installed CommitClaim, if
// any, in the transaction of the batch being committed (q), after its
// transactions, one of which inserted an event: the claim commits with
// them, and the dispatcher gets its jobs once they have committed
// (endRide), without a commit of its own behind the next batch. The claim
// runs in a savepoint, so that its failure costs the batch nothing but
// the claim; the dispatcher's own claim, woken by the event, then takes
// the deliveries. It returns false only when the transaction can no
// longer be used.
func (db *DB) claimInBatch(q *queries) bool {
	cc := db.claim.Load()
	if cc == nil {
		return true
	}
	p, ok := cc.c.Reserve()
	if !ok {
		return true
	}
	ctx := context.Background()
	w := db.wc
	if _, err := w.ExecContext(ctx, "SAVEPOINT claim"); err != nil {
		cc.c.Claimed(p, nil)
		return true
	}
	jobs, err := q.DeliveryClaimDue(ctx, p)
	if err != nil {
		cc.c.Claimed(p, nil)
		if _, err := w.ExecContext(ctx, "ROLLBACK TO claim"); err != nil {
			return false
		}
		_, err = w.ExecContext(ctx, "RELEASE claim")
		return err == nil
	}
	if _, err := w.ExecContext(ctx, "RELEASE claim"); err != nil {
		cc.c.Claimed(p, nil)
		return false
	}
	db.ride = &rideClaim{c: cc.c, p: p, jobs: jobs}
	return true
}

// endRide hands the claim made in the batch, if any, to its CommitClaim:
// its jobs when the batch committed, nothing otherwise.
func (db *DB) endRide(committed bool) {
	r := db.ride
	if r == nil {
		return
	}
	db.ride = nil
	if !committed {
		r.jobs = nil
	}
	r.c.Claimed(r.p, r.jobs)
}

// commitSavepoints runs each transaction of batch in a savepoint of its
// own, so that one that fails rolls back alone, and commits them.
func (db *DB) commitSavepoints(batch []*txRequest) {
	// The batch ignores its callers' cancellations: an interrupted
	// statement would roll back every transaction of the batch.
	ctx := context.Background()
	w := db.wc
	abort := func(err error) {
		_, _ = w.ExecContext(ctx, "ROLLBACK")
		db.finish(batch, mapErr(err))
	}
	if _, err := w.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		db.finish(batch, mapErr(err))
		return
	}
	q := newQueries(db, w, w)
	ok := 0
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.err = err
			continue
		}
		if _, err := w.ExecContext(ctx, "SAVEPOINT tx"); err != nil {
			abort(err)
			return
		}
		req.pan, req.err = runFn(context.WithValue(context.WithoutCancel(req.ctx), inTxKey{}, true), q, req.fn)
		if req.err != nil || req.pan != nil {
			if _, err := w.ExecContext(ctx, "ROLLBACK TO tx"); err != nil {
				// The transaction is unusable; fail the whole batch.
				abort(err)
				return
			}
		} else {
			ok++
		}
		if _, err := w.ExecContext(ctx, "RELEASE tx"); err != nil {
			abort(err)
			return
		}
	}
	db.commit(batch, ok)
}

// commit commits the transaction of batch, in which ok transactions
// succeeded, or rolls it back when none did, and answers batch.
func (db *DB) commit(batch []*txRequest, ok int) {
	ctx := context.Background()
	w := db.wc
	if ok == 0 {
		_, err := w.ExecContext(ctx, "ROLLBACK")
		db.endRide(false)
		db.finish(batch, mapErr(err))
		return
	}
	if _, err := w.ExecContext(ctx, "COMMIT"); err != nil {
		_, _ = w.ExecContext(ctx, "ROLLBACK")
		db.endRide(false)
		db.finish(batch, mapErr(err))
		return
	}
	db.txs.Add(int64(ok))
	db.commits.Add(1)
	db.endRide(true)
	db.finish(batch, nil)
}

// finish answers the requests of batch: each with its own failure, or
// else with err (nil: committed).
func (db *DB) finish(batch []*txRequest, err error) {
	// Whether it committed or not, a batch that wrote a store moves the
	// epoch before any of its callers learns the outcome.
	if db.storesWritten {
		db.storesWritten = false
		db.epoch.e.Bump()
	}
	for _, req := range batch {
		if req.err == nil && req.pan == nil {
			req.err = err
		}
		close(req.done)
	}
}

func runFn(ctx context.Context, q *queries, fn func(context.Context, storage.Executor) error) (pan any, err error) {
	defer func() {
		if p := recover(); p != nil {
			pan = p
		}
	}()
	return nil, fn(ctx, q)
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queries implements storage.Executor: the core's queries, on its SQL,
// and those of this file's package. Outside a transaction r is the reader
// pool and w is nil: writes then run in a transaction of their own through
// write. Inside one, both are the transaction.
type queries struct {
	core.Queries
	db *DB
	r  querier
	w  querier
	rc conn // r, for the core
	wc conn // w, for the core
}

// newQueries returns the executor on r and w (see queries).
func newQueries(db *DB, r, w querier) *queries {
	q := &queries{db: db, r: r, w: w, rc: conn{r}, wc: conn{w}}
	q.Queries = core.NewQueries(db.records, sqlText, &q.rc, q)
	return q
}

// write runs fn with a writable querier: the current transaction, or a new
// one.
func (q *queries) write(ctx context.Context, fn func(w querier) error) error {
	if q.w != nil {
		return fn(q.w)
	}
	return q.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		return fn(tx.(*queries).w)
	})
}

// Write implements core.Writer.
func (q *queries) Write(ctx context.Context, fn func(w core.Conn) error) error {
	if q.w != nil {
		return fn(&q.wc)
	}
	return q.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		return fn(&tx.(*queries).wc)
	})
}

// WriteStores implements core.Writer: the batch that commits the write
// moves the store epoch.
func (q *queries) WriteStores(ctx context.Context, fn func(w core.Conn) error) error {
	return q.Write(ctx, func(w core.Conn) error {
		q.db.storesWritten = true
		return fn(w)
	})
}

// InTx implements core.Writer.
func (q *queries) InTx() bool { return q.w != nil }

// collect scans every row with scan and closes rows; err is the query's.
func collect[T any](rows *sql.Rows, err error, scan func(core.Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	return core.Collect(dialect{}, sqlRows{rows}, nil, scan)
}
