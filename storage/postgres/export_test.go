package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// Pool returns the pool of db.
func Pool(db *DB) *pgxpool.Pool { return db.pool }
