// Package sqlite is the keelpay storage adapter for an embedded SQLite file
// (modernc.org/sqlite, no cgo).
//
// The file is opened in WAL mode with synchronous=FULL, so a committed
// payment survives a power cut. Writes go through one connection owned by
// one goroutine that commits the transactions waiting for it together
// (group commit: each keeps its own savepoint, all share one fsync); reads
// use a separate pool and never wait behind writes. A batch that inserted
// an event also claims due deliveries for the dispatcher that installed
// its claim ([DB.SetCommitClaim]; service.New does), in the same commit,
// so that a webhook leaves when its event commits.
//
// Open a file with [Open] and a [Config]; the [DB] it returns is a
// [github.com/keelpay/keelpay/storage.Storage] to hand to the services:
//
//	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: "keelpay.db"})
//	if err != nil {
//		return err
//	}
//	defer db.Close()
//	svc, err := service.New(service.Config{Provider: prov, Storage: db})
//
// Secrets (webhook secrets, client secrets of card sessions and intents,
// stored responses) and customers' personal data (names, emails, phones,
// billing details) are sealed with Config.Keyring on the way in and opened
// on the way out; see docs/security.md.
//
// The schema is the numbered SQL files of [Migrations], recorded in the
// table [MigrationsTable]. Open applies the missing ones; [Migrate] does the
// same from a deployment step; a team that runs migrations with its own
// tool applies the files itself and opens with Config.SkipMigrations.
//
// The mapping of records to rows, the conditional writes, list paging and
// the sealing at rest are the ones the PostgreSQL adapter uses too
// (storage/internal/core); this package holds SQLite's SQL, its writer and
// readers, statement caches, migrations, and the queries that are its own.
//
// One process owns the file. Several processes sharing one database use
// PostgreSQL ([github.com/keelpay/keelpay/storage/postgres]); see
// docs/operating.md.
package sqlite
