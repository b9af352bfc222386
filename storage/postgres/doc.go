// Package postgres is the keelpay storage adapter for PostgreSQL (pgx v5
// with a [pgxpool.Pool]): the distributed engine, for several processes
// that serve one set of stores.
//
// Open connects, applies the embedded migrations it has not seen and
// returns a [DB], which implements [storage.Storage]:
//
//	kr, err := keyring.Parse(os.Getenv("KEELPAY_ENCRYPTION_KEY"))
//	...
//	db, err := postgres.Open(ctx, postgres.Config{
//		DSN:     "postgres://keelpay:secret@db.internal:5432/shop",
//		Keyring: kr, // seals secrets and personal data at rest; the same on every process
//	})
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//
// keelpay's tables live in a schema of their own, "keelpay" ([SchemaDefault]),
// unless Config.Schema or the DSN's search_path names another.
//
// An application that already has a pool hands it over instead of a DSN,
// with [OpenPool] (or Config.Pool): keelpay works on it, leaves it open on
// Close, and leaves its session settings to its owner; see Config.Pool.
//
// The mapping of records to rows, the conditional writes, list paging and
// the sealing at rest are the ones the SQLite adapter uses too
// (storage/internal/core); this package holds PostgreSQL's SQL, its
// connection and transaction handling (pgxpool, a BEGIN sent with the
// first statement, retries of transient failures, tracing) and the
// queries that are its own.
//
// # Migrations
//
// The schema is the numbered SQL files of [Migrations], recorded in the
// table [MigrationsTable]. Open applies the missing ones; [Migrate] does
// the same from a deployment step; a team that runs migrations with its
// own tool applies the files itself and opens the database with
// Config.SkipMigrations.
//
// Processes that start together do not race: migrations run under an
// advisory lock. Every guarantee of the storage contract holds across
// processes, by PostgreSQL's own means: conditional updates and row locks
// for state changes, FOR UPDATE SKIP LOCKED for delivery claims, advisory
// locks for rate limits, INSERT ... ON CONFLICT for idempotency keys.
// [DB.WithTx] runs at READ COMMITTED and runs its function again when the
// database reports a serialisation failure or deadlock; [DB.Commit] sends
// a batch of writes as one pipeline, one round trip, which PostgreSQL
// runs as one implicit transaction.
//
// Times are timestamptz, kept to the microsecond and read back in UTC; a
// time that is not set is stored as -infinity and read back as the zero
// time.
//
// Tests of other packages get a fresh database in a schema of its own from
// [github.com/keelpay/keelpay/storage/postgres/postgrestest].
package postgres
