package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// sealBatch is how many rows one transaction of the step at Open changes.
const sealBatch = 500

// sealAtRest is the step at Open after the migrations: it checks the
// keyring against the database's key checks, hashes client secrets an
// older version kept in plain text, and seals (or re-seals under the
// current key) every sealed column. When it changed anything it rewrites
// the file, so that no page keeps the old plaintext.
func sealAtRest(ctx context.Context, w *sql.DB, c atrest.Codec) error {
	for _, id := range c.KR.IDs() {
		sealed, err := c.NewCheck(id)
		if err != nil {
			return err
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO `+atrest.CheckTable+` (key_id, sealed) VALUES (?, ?)
			ON CONFLICT (key_id) DO NOTHING`, id, sealed); err != nil {
			return mapErr(err)
		}
		if err := w.QueryRowContext(ctx, `SELECT sealed FROM `+atrest.CheckTable+` WHERE key_id = ?`, id).Scan(&sealed); err != nil {
			return mapErr(err)
		}
		if err := c.Check(id, sealed); err != nil {
			return err
		}
	}
	changed := 0
	for {
		n, err := sealBatchTx(ctx, w, func(tx *sql.Tx) (int, error) {
			rows, err := tx.QueryContext(ctx, `SELECT id, client_secret FROM stores WHERE client_secret <> '' LIMIT ?`, sealBatch)
			if err != nil {
				return 0, err
			}
			pending, err := scanPairs(rows)
			if err != nil {
				return 0, err
			}
			for _, p := range pending {
				if _, err := tx.ExecContext(ctx, `UPDATE stores SET client_secret_hash = ?, client_secret = '' WHERE id = ?`,
					keyring.HashSecret(p[1]), p[0]); err != nil {
					return 0, err
				}
			}
			return len(pending), nil
		})
		if err != nil {
			return fmt.Errorf("sqlite: hash client secrets: %w", err)
		}
		changed += n
		if n < sealBatch {
			break
		}
	}
	prefix := c.CurrentPrefix()
	for _, col := range atrest.Columns {
		var arg any = prefix
		if col.Blob {
			arg = []byte(prefix)
		}
		keys := strings.Join(col.Keys, ", ")
		for {
			n, err := sealBatchTx(ctx, w, func(tx *sql.Tx) (int, error) {
				rows, err := tx.QueryContext(ctx, `SELECT `+keys+`, `+col.Name+` FROM `+col.Table+`
					WHERE length(`+col.Name+`) > 0 AND substr(`+col.Name+`, 1, ?) <> ? LIMIT ?`, len(prefix), arg, sealBatch)
				if err != nil {
					return 0, err
				}
				var pending [][]string
				for rows.Next() {
					vals := make([]string, len(col.Keys)+1)
					dst := make([]any, len(vals))
					for i := range vals {
						dst[i] = &vals[i]
					}
					if col.Blob {
						var b []byte
						dst[len(vals)-1] = &b
						if err := rows.Scan(dst...); err != nil {
							rows.Close()
							return 0, err
						}
						vals[len(vals)-1] = string(b)
					} else if err := rows.Scan(dst...); err != nil {
						rows.Close()
						return 0, err
					}
					pending = append(pending, vals)
				}
				if err := rows.Close(); err != nil {
					return 0, err
				}
				for _, vals := range pending {
					keyVals := vals[:len(col.Keys)]
					sealed, err := c.Reseal(col, vals[len(vals)-1], keyVals...)
					if err != nil {
						return 0, err
					}
					var v any = sealed
					if col.Blob {
						v = []byte(sealed)
					}
					args := []any{v}
					where := make([]string, len(col.Keys))
					for i, k := range col.Keys {
						where[i] = k + " = ?"
						args = append(args, keyVals[i])
					}
					if _, err := tx.ExecContext(ctx, `UPDATE `+col.Table+` SET `+col.Name+` = ? WHERE `+strings.Join(where, " AND "), args...); err != nil {
						return 0, err
					}
				}
				return len(pending), nil
			})
			if err != nil {
				return fmt.Errorf("sqlite: seal %s.%s: %w", col.Table, col.Name, err)
			}
			changed += n
			if n < sealBatch {
				break
			}
		}
	}
	if changed == 0 {
		return nil
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

func sealBatchTx(ctx context.Context, w *sql.DB, fn func(tx *sql.Tx) (int, error)) (int, error) {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return 0, mapErr(err)
	}
	defer tx.Rollback()
	n, err := fn(tx)
	if err != nil {
		return 0, mapErr(err)
	}
	return n, mapErr(tx.Commit())
}

func scanPairs(rows *sql.Rows) ([][2]string, error) {
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var p [2]string
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
