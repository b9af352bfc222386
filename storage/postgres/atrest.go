package postgres

import (
	"context"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/keelpay/keelpay/storage/internal/atrest"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// sealAtRest is the step at Open after the migrations, under the
// migration lock (core.SealAtRest).
//
// PostgreSQL keeps the old row versions until they are vacuumed: after an
// upgrade that sealed existing values, run VACUUM (docs/security.md).
func sealAtRest(ctx context.Context, c *pgx.Conn, codec atrest.Codec) error {
	begin := func(ctx context.Context, fn func(tx core.Conn) error) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return fn(&conn{tx}) })
	}
	_, err := core.SealAtRest(ctx, &conn{c}, begin, dialect{}, codec, func(col atrest.Column, prefixLen int) string {
		n := strconv.Itoa(prefixLen)
		if col.Blob {
			return `length(` + col.Name + `) > 0 AND substring(` + col.Name + ` from 1 for ` + n + `) <> $1::bytea`
		}
		return col.Name + ` <> '' AND left(` + col.Name + `, ` + n + `) <> $1`
	})
	return err
}
