package refserver

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// refserver backup [-db PATH] [-key-file FILE] [-sandbox-db PATH] DEST
//
// backup copies a SQLite database that a server may be serving from, with
// SQLite's VACUUM INTO: the copy is one consistent snapshot of the
// database, taken in a read transaction, so the server goes on reading and
// writing meanwhile. The sandbox's file is copied the same way, after the
// database, to the sandbox file that belongs to DEST (DEST's name without
// extension + .sandbox.db), where a server started with -db DEST finds it.
// Each copy is written beside its destination under a temporary name,
// synced and renamed, then checked: PRAGMA integrity_check, and (keelpay's
// database) sqlite.Open with the server's encryption keys, so that a copy
// that would not open with them is reported at once and removed. The keys are not
// copied: they are backed up apart from the data (docs/security.md).

// backupConfig is what the flags of refserver backup choose.
type backupConfig struct {
	config
	dest string
	// sandboxGiven is true when -sandbox-db or KEELPAY_SANDBOX_DB named the
	// sandbox's file: then it must exist.
	sandboxGiven bool
}

func parseBackupConfig(args []string, getenv func(string) string, stderr io.Writer) (backupConfig, error) {
	fs := flag.NewFlagSet("refserver backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: refserver backup [-db PATH] [-key-file FILE] [-sandbox-db PATH] DEST")
		fs.PrintDefaults()
	}
	var c backupConfig
	fs.StringVar(&c.db, "db", envOr(getenv, "KEELPAY_DB", "keelpay.db"), "the SQLite database to copy (env KEELPAY_DB)")
	fs.StringVar(&c.keyFile, "key-file", getenv("KEELPAY_KEY_FILE"),
		"file with the encryption keys (env KEELPAY_KEY_FILE; KEELPAY_ENCRYPTION_KEY gives them directly); default: the database path + .key")
	fs.StringVar(&c.sandboxDB, "sandbox-db", getenv("KEELPAY_SANDBOX_DB"),
		"the sandbox's SQLite file (env KEELPAY_SANDBOX_DB; default next to -db, NAME.sandbox.db, copied when it exists)")
	// Flags may come before or after DEST (refserver backup DEST -db X
	// is what people type): parse, set the next positional argument
	// aside, parse what follows it, until nothing is left. After "--"
	// everything is positional.
	var dests []string
	rest := args
	for len(rest) > 0 {
		before := len(rest)
		if err := fs.Parse(rest); err != nil {
			return c, err
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := args[len(args)-before : len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			dests = append(dests, rest...)
			break
		}
		dests, rest = append(dests, rest[0]), rest[1:]
	}
	if len(dests) != 1 {
		fs.Usage()
		return c, fmt.Errorf("backup needs exactly one destination path, got %d: refserver backup [-db PATH] [-key-file FILE] [-sandbox-db PATH] DEST", len(dests))
	}
	c.dest = dests[0]
	if isPostgres(c.db) {
		return c, errors.New("backup copies SQLite databases; back a PostgreSQL database up with pg_dump or WAL archiving (docs/operating.md)")
	}
	c.sandboxGiven = c.sandboxDB != ""
	if !c.sandboxGiven {
		c.sandboxDB = defaultSandboxDB(c.db)
	}
	return c, nil
}

// backupKeyring reads the server's keys as loadKeyring does, but never
// creates a key file: a database without its keys cannot be checked.
func backupKeyring(cfg config, getenv func(string) string) (*keyring.Keyring, error) {
	if getenv("KEELPAY_ENCRYPTION_KEY") != "" || cfg.keyFile != "" {
		kr, _, err := loadKeyring(cfg, getenv)
		return kr, err
	}
	return keyring.ReadFile(cfg.db + keyFileSuffix)
}

// runBackup is refserver backup.
func runBackup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseBackupConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	kr, err := backupKeyring(cfg.config, getenv)
	if err != nil {
		return fmt.Errorf("encryption key: %w", err)
	}
	if _, err := os.Stat(cfg.db); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	sandboxDest := defaultSandboxDB(cfg.dest)
	copySandbox := true
	if _, err := os.Stat(cfg.sandboxDB); errors.Is(err, fs.ErrNotExist) && !cfg.sandboxGiven {
		copySandbox = false
	} else if err != nil {
		return fmt.Errorf("sandbox database: %w", err)
	}
	for _, dest := range []string{cfg.dest, sandboxDest} {
		if _, err := os.Lstat(dest); err == nil {
			return fmt.Errorf("%s exists: a backup never overwrites a file", dest)
		}
		if dest == cfg.dest && !copySandbox {
			break
		}
	}

	// keelpay's database first, then the sandbox's: a sandbox copy that is
	// ahead of the database is what a real provider always is, and the
	// reconciliation that runs after a restore deals with it.
	if err := vacuumInto(ctx, cfg.db, cfg.dest); err != nil {
		return err
	}
	if err := checkCopy(ctx, cfg.dest, kr); err != nil {
		return errors.Join(err, removeCopy(cfg.dest))
	}
	fmt.Fprintf(stdout, "copied %s to %s (integrity ok; opens with the encryption keys, which are not in the copy)\n", cfg.db, cfg.dest)
	if !copySandbox {
		fmt.Fprintf(stdout, "no sandbox database at %s: nothing else to copy\n", cfg.sandboxDB)
		return nil
	}
	if err := vacuumInto(ctx, cfg.sandboxDB, sandboxDest); err != nil {
		return err
	}
	if err := checkCopy(ctx, sandboxDest, nil); err != nil {
		return errors.Join(err, removeCopy(sandboxDest))
	}
	fmt.Fprintf(stdout, "copied %s to %s (integrity ok)\n", cfg.sandboxDB, sandboxDest)
	return nil
}

// sqliteDSN is the DSN of the file at path for modernc.org/sqlite, with a
// busy time-out for the moments a checkpoint holds a lock.
func sqliteDSN(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?_pragma=busy_timeout(10000)"
}

// vacuumInto writes a consistent copy of the database at src to dest:
// VACUUM INTO a temporary file beside dest, synced, then renamed.
func vacuumInto(ctx context.Context, src, dest string) (err error) {
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return err
	}
	tmp := dest + ".partial"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	db, err := sql.Open("sqlite", sqliteDSN(src))
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmp); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := errors.Join(f.Chmod(0o600), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dest))
}

// removeCopy removes a copy that failed its check, with the files SQLite
// may have left beside it.
func removeCopy(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// checkCopy runs PRAGMA integrity_check on the copy at path and, with a
// keyring, opens it as the server would (sqlite.Open checks that the keys
// are the ones the database was sealed with).
func checkCopy(ctx context.Context, path string, kr *keyring.Keyring) error {
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return err
	}
	var result string
	err = db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&result)
	db.Close()
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if result != "ok" {
		return fmt.Errorf("check %s: integrity_check says %q", path, result)
	}
	if kr == nil {
		return nil
	}
	kdb, err := sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: path, SkipMigrations: true})
	if err != nil {
		return fmt.Errorf("the copy %s does not open with the encryption keys: %w", path, err)
	}
	return kdb.Close()
}
