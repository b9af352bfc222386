package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// Migrations are the embedded migrations.
var Migrations = migrations

// Pool returns the pool of db.
func Pool(db *DB) *pgxpool.Pool { return db.pool }
