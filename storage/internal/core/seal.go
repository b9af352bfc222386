package core

import (
	"context"
	"fmt"
	"strings"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// SealBatch is how many rows one transaction of SealAtRest changes.
const SealBatch = 500

// Begin runs fn in a transaction of its own.
type Begin func(ctx context.Context, fn func(tx Conn) error) error

// SealAtRest is the step at Open after the migrations: it checks the
// keyring against the database's key checks, hashes client secrets an
// older version kept in plain text, and seals (or re-seals under the
// current key) every sealed column, on conn, alone, SealBatch rows per
// transaction begun with begin.
// unsealed is the condition, in the database's SQL, of a value of col
// that is not empty and does not start with the current key's prefix,
// which is parameter 1. It returns how many rows it changed.
func SealAtRest(ctx context.Context, conn Conn, begin Begin, d Dialect, c atrest.Codec, unsealed func(col atrest.Column, prefixLen int) string) (int, error) {
	p := d.Placeholder
	for _, id := range c.KR.IDs() {
		sealed, err := c.NewCheck(id)
		if err != nil {
			return 0, err
		}
		if _, err := conn.Exec(ctx, `INSERT INTO `+atrest.CheckTable+` (key_id, sealed) VALUES (`+p(1)+`, `+p(2)+`)
			ON CONFLICT (key_id) DO NOTHING`, id, sealed); err != nil {
			return 0, fmt.Errorf("%s: key check: %w", d.Name(), d.MapErr(err))
		}
		if err := conn.QueryRow(ctx, `SELECT sealed FROM `+atrest.CheckTable+` WHERE key_id = `+p(1), id).Scan(&sealed); err != nil {
			return 0, fmt.Errorf("%s: key check: %w", d.Name(), d.MapErr(err))
		}
		if err := c.Check(id, sealed); err != nil {
			return 0, fmt.Errorf("%s: %w", d.Name(), err)
		}
	}
	changed := 0
	// Client secrets in plain text become their hashes.
	hashed, err := sealBatches(ctx, begin, func(tx Conn) (int, error) {
		rows, err := tx.Query(ctx, `SELECT id, client_secret FROM stores WHERE client_secret <> '' LIMIT `+p(1), SealBatch)
		pending, err := Collect(d, rows, err, func(r Row) ([2]string, error) {
			var v [2]string
			return v, r.Scan(&v[0], &v[1])
		})
		if err != nil {
			return 0, err
		}
		for _, v := range pending {
			if _, err := tx.Exec(ctx, `UPDATE stores SET client_secret_hash = `+p(1)+`, client_secret = '' WHERE id = `+p(2),
				keyring.HashSecret(v[1]), v[0]); err != nil {
				return 0, err
			}
		}
		return len(pending), nil
	})
	changed += hashed
	if err != nil {
		return changed, fmt.Errorf("%s: hash client secrets: %w", d.Name(), d.MapErr(err))
	}
	prefix := c.CurrentPrefix()
	for _, col := range atrest.Columns {
		var arg any = prefix
		if col.Blob {
			arg = []byte(prefix)
		}
		where := make([]string, len(col.Keys))
		for i, k := range col.Keys {
			where[i] = k + " = " + p(i+2)
		}
		sel := `SELECT ` + strings.Join(col.Keys, ", ") + `, ` + col.Name + ` FROM ` + col.Table +
			` WHERE ` + unsealed(col, len(prefix)) + ` LIMIT ` + p(2)
		update := `UPDATE ` + col.Table + ` SET ` + col.Name + ` = ` + p(1) + ` WHERE ` + strings.Join(where, " AND ")
		n, err := sealBatches(ctx, begin, func(tx Conn) (int, error) {
			rows, err := tx.Query(ctx, sel, arg, SealBatch)
			pending, err := Collect(d, rows, err, func(r Row) ([]string, error) {
				// The keys, then the value.
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
				return 0, err
			}
			for _, vals := range pending {
				keys := vals[:len(col.Keys)]
				sealed, err := c.Reseal(col, vals[len(vals)-1], keys...)
				if err != nil {
					return 0, err
				}
				var v any = sealed
				if col.Blob {
					v = []byte(sealed)
				}
				args := []any{v}
				for _, k := range keys {
					args = append(args, k)
				}
				if _, err := tx.Exec(ctx, update, args...); err != nil {
					return 0, err
				}
			}
			return len(pending), nil
		})
		changed += n
		if err != nil {
			return changed, fmt.Errorf("%s: seal %s.%s: %w", d.Name(), col.Table, col.Name, d.MapErr(err))
		}
	}
	return changed, nil
}

// sealBatches runs batch, each time in a transaction of its own, until it
// changes fewer than SealBatch rows, and returns the rows changed.
func sealBatches(ctx context.Context, begin Begin, batch func(tx Conn) (int, error)) (int, error) {
	total := 0
	for {
		n := 0
		err := begin(ctx, func(tx Conn) error {
			var err error
			n, err = batch(tx)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < SealBatch {
			return total, nil
		}
	}
}
