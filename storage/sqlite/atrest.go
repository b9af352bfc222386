package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/keelpay/keelpay/storage/internal/atrest"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// sealAtRest is the step at Open after the migrations (core.SealAtRest).
// When it changed anything it rewrites the file, so that no page keeps
// the old plaintext.
func sealAtRest(ctx context.Context, w *sql.DB, c atrest.Codec) error {
	changed, err := core.SealAtRest(ctx, &conn{w}, beginFunc(w), dialect{}, c, func(col atrest.Column, prefixLen int) string {
		return `length(` + col.Name + `) > 0 AND substr(` + col.Name + `, 1, ` + strconv.Itoa(prefixLen) + `) <> ?1`
	})
	if err != nil || changed == 0 {
		return err
	}
	// The old values may still be in free pages of the file and in the
	// write-ahead log: write everything back, rebuild the file, empty the
	// log.
	for _, stmt := range []string{`PRAGMA wal_checkpoint(TRUNCATE)`, `VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := w.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sqlite: after sealing: %s: %w", stmt, mapErr(err))
		}
	}
	return nil
}

// beginFunc begins transactions on db (core.Begin).
func beginFunc(db *sql.DB) core.Begin {
	return func(ctx context.Context, fn func(tx core.Conn) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fn(&conn{tx}); err != nil {
			return err
		}
		return tx.Commit()
	}
}
