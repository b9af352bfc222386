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
	for _, cols := range byTable(atrest.Columns) {
		n, err := sealTable(ctx, begin, d, c, cols, prefix, unsealed)
		changed += n
		if err != nil {
			return changed, fmt.Errorf("%s: seal %s: %w", d.Name(), cols[0].Table, d.MapErr(err))
		}
	}
	return changed, nil
}

// byTable splits cols into runs of one table each.
func byTable(cols []atrest.Column) [][]atrest.Column {
	var tables [][]atrest.Column
	for i, col := range cols {
		if i == 0 || cols[i-1].Table != col.Table {
			tables = append(tables, nil)
		}
		tables[len(tables)-1] = append(tables[len(tables)-1], col)
	}
	return tables
}

// sealTable seals the pending values of the sealed columns cols of one
// table (they share their key columns): it reads the rows where any of
// them is pending, once for all of them, and writes every column of such
// a row back, the pending ones (re)sealed.
func sealTable(ctx context.Context, begin Begin, d Dialect, c atrest.Codec, cols []atrest.Column, prefix string,
	unsealed func(col atrest.Column, prefixLen int) string) (int, error) {
	p := d.Placeholder
	keyCols := cols[0].Keys
	var arg any = prefix
	if cols[0].Blob {
		arg = []byte(prefix)
	}
	names := make([]string, len(cols))
	conds := make([]string, len(cols))
	sets := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.Name
		conds[i] = "(" + unsealed(col, len(prefix)) + ")"
		sets[i] = col.Name + " = " + p(i+1)
	}
	where := make([]string, len(keyCols))
	for i, k := range keyCols {
		where[i] = k + " = " + p(len(cols)+i+1)
	}
	sel := `SELECT ` + strings.Join(keyCols, ", ") + `, ` + strings.Join(names, ", ") + ` FROM ` + cols[0].Table +
		` WHERE ` + strings.Join(conds, " OR ") + ` LIMIT ` + p(2)
	update := `UPDATE ` + cols[0].Table + ` SET ` + strings.Join(sets, ", ") + ` WHERE ` + strings.Join(where, " AND ")
	return sealBatches(ctx, begin, func(tx Conn) (int, error) {
		rows, err := tx.Query(ctx, sel, arg, SealBatch)
		pending, err := Collect(d, rows, err, func(r Row) ([]string, error) {
			// The keys, then the values.
			vals := make([]string, len(keyCols)+len(cols))
			dst := make([]any, len(vals))
			blobs := make([][]byte, len(cols))
			for i := range vals {
				dst[i] = &vals[i]
				if j := i - len(keyCols); j >= 0 && cols[j].Blob {
					dst[i] = &blobs[j]
				}
			}
			if err := r.Scan(dst...); err != nil {
				return nil, err
			}
			for j, col := range cols {
				if col.Blob {
					vals[len(keyCols)+j] = string(blobs[j])
				}
			}
			return vals, nil
		})
		if err != nil {
			return 0, err
		}
		for _, vals := range pending {
			keys := vals[:len(keyCols)]
			args := make([]any, 0, len(vals))
			for j, col := range cols {
				v := vals[len(keyCols)+j]
				if v != "" && !strings.HasPrefix(v, prefix) {
					if v, err = c.Reseal(col, v, keys...); err != nil {
						return 0, err
					}
				}
				if col.Blob {
					args = append(args, []byte(v))
				} else {
					args = append(args, v)
				}
			}
			for _, k := range keys {
				args = append(args, k)
			}
			if _, err := tx.Exec(ctx, update, args...); err != nil {
				return 0, err
			}
		}
		return len(pending), nil
	})
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
