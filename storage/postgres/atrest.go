package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// sealBatch is how many rows one transaction of the step at Open changes.
const sealBatch = 500

// sealAtRest is the step at Open after the migrations, under the
// migration lock: it checks the keyring against the database's key
// checks, hashes client secrets an older version kept in plain text, and
// seals (or re-seals under the current key) every sealed column.
//
// PostgreSQL keeps the old row versions until they are vacuumed: after an
// upgrade that sealed existing values, run VACUUM (docs/security.md).
func sealAtRest(ctx context.Context, conn *pgx.Conn, c atrest.Codec) error {
	for _, id := range c.KR.IDs() {
		sealed, err := c.NewCheck(id)
		if err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, `INSERT INTO `+atrest.CheckTable+` (key_id, sealed) VALUES ($1, $2)
			ON CONFLICT (key_id) DO NOTHING`, id, sealed); err != nil {
			return fmt.Errorf("postgres: key check: %w", mapErr(err))
		}
		if err := conn.QueryRow(ctx, `SELECT sealed FROM `+atrest.CheckTable+` WHERE key_id = $1`, id).Scan(&sealed); err != nil {
			return fmt.Errorf("postgres: key check: %w", mapErr(err))
		}
		if err := c.Check(id, sealed); err != nil {
			return fmt.Errorf("postgres: %w", err)
		}
	}
	for {
		n := 0
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT id, client_secret FROM stores WHERE client_secret <> '' LIMIT $1`, sealBatch)
			if err != nil {
				return err
			}
			pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
				var p [2]string
				err := r.Scan(&p[0], &p[1])
				return p, err
			})
			if err != nil {
				return err
			}
			for _, p := range pending {
				if _, err := tx.Exec(ctx, `UPDATE stores SET client_secret_hash = $1, client_secret = '' WHERE id = $2`,
					keyring.HashSecret(p[1]), p[0]); err != nil {
					return err
				}
			}
			n = len(pending)
			return nil
		})
		if err != nil {
			return fmt.Errorf("postgres: hash client secrets: %w", mapErr(err))
		}
		if n < sealBatch {
			break
		}
	}
	prefix := c.CurrentPrefix()
	for _, col := range atrest.Columns {
		keys := strings.Join(col.Keys, ", ")
		var filter string
		var arg any
		if col.Blob {
			filter = `length(` + col.Name + `) > 0 AND substring(` + col.Name + ` from 1 for ` + strconv.Itoa(len(prefix)) + `) <> $1::bytea`
			arg = []byte(prefix)
		} else {
			filter = col.Name + ` <> '' AND left(` + col.Name + `, ` + strconv.Itoa(len(prefix)) + `) <> $1`
			arg = prefix
		}
		where := make([]string, len(col.Keys))
		for i, k := range col.Keys {
			where[i] = k + " = $" + strconv.Itoa(i+2)
		}
		update := `UPDATE ` + col.Table + ` SET ` + col.Name + ` = $1 WHERE ` + strings.Join(where, " AND ")
		for {
			n := 0
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				rows, err := tx.Query(ctx, `SELECT `+keys+`, `+col.Name+` FROM `+col.Table+` WHERE `+filter+` LIMIT $2`, arg, sealBatch)
				if err != nil {
					return err
				}
				pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
					vals := make([]string, len(col.Keys)+1)
					dst := make([]any, len(vals))
					for i := range col.Keys {
						dst[i] = &vals[i]
					}
					var b []byte
					if col.Blob {
						dst[len(vals)-1] = &b
					} else {
						dst[len(vals)-1] = &vals[len(vals)-1]
					}
					if err := r.Scan(dst...); err != nil {
						return nil, err
					}
					if col.Blob {
						vals[len(vals)-1] = string(b)
					}
					return vals, nil
				})
				if err != nil {
					return err
				}
				for _, vals := range pending {
					keyVals := vals[:len(col.Keys)]
					sealed, err := c.Reseal(col, vals[len(vals)-1], keyVals...)
					if err != nil {
						return err
					}
					var v any = sealed
					if col.Blob {
						v = []byte(sealed)
					}
					args := []any{v}
					for _, k := range keyVals {
						args = append(args, k)
					}
					if _, err := tx.Exec(ctx, update, args...); err != nil {
						return err
					}
				}
				n = len(pending)
				return nil
			})
			if err != nil {
				return fmt.Errorf("postgres: seal %s.%s: %w", col.Table, col.Name, mapErr(err))
			}
			if n < sealBatch {
				break
			}
		}
	}
	return nil
}
