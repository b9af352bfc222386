package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/keelpay/keelpay/storage/internal/core"
)

// Migrations holds keelpay's schema as numbered SQL files,
// migration/NNN_name.sql, each applied once, in the order of its number,
// in a transaction of its own. A team that runs migrations with its own
// tool takes them from here (and opens the database with
// Config.SkipMigrations); everyone else lets [Open] or [Migrate] apply them.
//
//go:embed migration/*.sql
var Migrations embed.FS

// MigrationsTable is the table that records which migrations were applied
// (version, applied_at in Unix microseconds). It has a name of keelpay's
// own, so that it never meets the schema_migrations table of other tools
// in a shared file.
const MigrationsTable = "keelpay_migrations"

// legacyMigrationsTable is the name keelpay's table had before it was
// renamed. It is moved to MigrationsTable when it is keelpay's (columns
// version and applied_at); another tool's table of that name (such as
// golang-migrate's, with version and dirty) is left alone.
const legacyMigrationsTable = "schema_migrations"

// Migrate applies the migrations of [Migrations] that the database file at
// cfg.Path has not seen, creating the file if needed, and closes it. Run
// it from a deployment step when the application opens the database with
// Config.SkipMigrations; [Open] without it does the same itself.
func Migrate(ctx context.Context, cfg Config) error {
	cfg = cfg.WithDefaults()
	if cfg.Path == "" {
		return fmt.Errorf("sqlite: Config.Path is required")
	}
	w, err := sql.Open("sqlite", dsn(cfg, false))
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	return migrate(ctx, w)
}

func migrate(ctx context.Context, w *sql.DB) error {
	if err := moveLegacyTable(ctx, w); err != nil {
		return fmt.Errorf("sqlite: migrations table: %w", mapErr(err))
	}
	if _, err := w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+MigrationsTable+` (
		version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("sqlite: migrations table: %w", mapErr(err))
	}
	migrations, err := core.Migrations(Migrations)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	for _, m := range migrations {
		if err := applyMigration(ctx, w, m.Version, m.Body); err != nil {
			return fmt.Errorf("sqlite: migration %s: %w", m.Name, err)
		}
	}
	return nil
}

// moveLegacyTable renames keelpay's old schema_migrations to
// MigrationsTable, in one transaction, when the new table does not exist
// yet and the old one has exactly keelpay's columns.
func moveLegacyTable(ctx context.Context, w *sql.DB) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var exists int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`,
		MigrationsTable).Scan(&exists); err != nil || exists > 0 {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, legacyMigrationsTable)
	if err != nil {
		return err
	}
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return err
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if strings.Join(cols, ",") != "version,applied_at" {
		return nil // absent, or another tool's
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE `+legacyMigrationsTable+` RENAME TO `+MigrationsTable); err != nil {
		return err
	}
	return tx.Commit()
}

func applyMigration(ctx context.Context, w *sql.DB, version int, body string) error {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+MigrationsTable+` WHERE version = ?`, version).Scan(&n); err != nil {
		return mapErr(err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return mapErr(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+MigrationsTable+` (version, applied_at) VALUES (?, ?)`,
		version, time.Now().UTC().UnixMicro()); err != nil {
		return mapErr(err)
	}
	return mapErr(tx.Commit())
}
