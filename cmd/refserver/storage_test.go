package main

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// openStorage opens the database of a server under test as the server
// does: PostgreSQL for a postgres:// or postgresql:// URL, a SQLite file
// for anything else. tp, when set, traces PostgreSQL's statements.
func openStorage(ctx context.Context, dsn string, kr *keyring.Keyring, tp trace.TracerProvider) (storage.Storage, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return postgres.Open(ctx, postgres.Config{DSN: dsn, Keyring: kr, TracerProvider: tp})
	}
	return sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: dsn})
}
