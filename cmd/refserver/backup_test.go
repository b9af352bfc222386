package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// TestBackupWhileServing runs payments against a built server, takes
// refserver backup while they run, and checks the copy: it passes
// integrity_check, opens with the server's keys, holds every intent whose
// payment had succeeded before the backup started, and a server started on
// it (with the same keys) serves them.
func TestBackupWhileServing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, []string{"KEELPAY_ADDR=127.0.0.1:0"})
	sh := setupShop(t, s, "app_backup", "http://127.0.0.1:9/webhooks")

	var (
		backupStarted atomic.Bool
		mu            sync.Mutex
		before        []string // intents that succeeded before the backup started
		paid          = make(chan struct{}, 1024)
		stopLoad      = make(chan struct{})
		load          sync.WaitGroup
		loadErr       atomic.Value
	)
	for range 4 {
		load.Go(func() {
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				pi, err := send("POST", s.URL+"/v1/payment_intents", sh.sk, intentBody(1500))
				if err == nil && pi.Status != http.StatusCreated {
					err = fmt.Errorf("create: status %d: %v", pi.Status, pi.Body)
				}
				if err != nil {
					loadErr.Store(err)
					return
				}
				r, err := send("POST", s.URL+"/v1/payment_intents/"+pi.Str("id")+"/confirm", sh.pk, confirmBody(pi, "4242424242424242"))
				if err == nil && r.Str("status") != "succeeded" {
					err = fmt.Errorf("confirm: status %d: %v", r.Status, r.Body)
				}
				if err != nil {
					loadErr.Store(err)
					return
				}
				// The answer came before this read; when the flag is
				// still down, it came before the backup started.
				if !backupStarted.Load() {
					mu.Lock()
					before = append(before, r.Str("id"))
					mu.Unlock()
				}
				select {
				case paid <- struct{}{}:
				default:
				}
			}
		})
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(stopLoad)
			load.Wait()
		}
	}
	t.Cleanup(stop)
	// Some payments first, so that the copy has something to hold.
	for range 20 {
		select {
		case <-paid:
		case <-time.After(time.Minute):
			t.Fatalf("the load made no payment: %v", loadErr.Load())
		}
	}

	backupStarted.Store(true)
	mu.Lock()
	committed := append([]string(nil), before...)
	mu.Unlock()
	out, err := exec.Command(refserver, "backup", "-db", filepath.Join(dir, "keelpay.db"), filepath.Join(dir, "backup", "copy.db")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "integrity ok")
	// The load ran all along.
	select {
	case <-paid:
	case <-time.After(time.Minute):
		t.Fatalf("the load stopped: %v", loadErr.Load())
	}
	stop()
	require.Nil(t, loadErr.Load())
	require.NotEmpty(t, committed)

	copyPath := filepath.Join(dir, "backup", "copy.db")
	require.Equal(t, "ok", integrityCheck(t, copyPath))
	require.Equal(t, "ok", integrityCheck(t, filepath.Join(dir, "backup", "copy.sandbox.db")), "the sandbox's file is copied beside it")

	// The copy opens with the server's keys and holds the intents.
	kr, err := keyring.ReadFile(filepath.Join(dir, "keelpay.db.key"))
	require.NoError(t, err)
	db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: kr, Path: copyPath})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	raw, err := sql.Open("sqlite", copyPath)
	require.NoError(t, err)
	statuses := map[string]string{}
	rows, err := raw.Query(`SELECT id, status FROM payment_intents`)
	require.NoError(t, err)
	for rows.Next() {
		var id, status string
		require.NoError(t, rows.Scan(&id, &status))
		statuses[id] = status
	}
	require.NoError(t, rows.Err())
	require.NoError(t, raw.Close())
	for _, id := range committed {
		require.Equal(t, "succeeded", statuses[id], "intent %s succeeded before the backup started", id)
	}

	// Restored: a server on the copy, with the same keys, serves them.
	s.Cmd.Process.Kill()
	_ = s.Cmd.Wait()
	restored := start(t, filepath.Join(dir, "backup"), []string{"KEELPAY_ADDR=127.0.0.1:0"},
		"-db", "copy.db", "-key-file", filepath.Join(dir, "keelpay.db.key"))
	for _, id := range []string{committed[0], committed[len(committed)-1]} {
		r := must(t, "GET", restored.URL+"/v1/payment_intents/"+id, sh.sk, nil)
		require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		require.Equal(t, "succeeded", r.Str("status"))
	}
}

// TestBackupRefusals: a backup never overwrites a file, never copies with
// keys the database does not know (and leaves nothing behind then), and
// points PostgreSQL to its own tools.
func TestBackupRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, []string{"KEELPAY_ADDR=127.0.0.1:0"})
	setupShop(t, s, "app_refusals", "http://127.0.0.1:9/webhooks")
	backup := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(refserver, append([]string{"backup"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := backup(nil, "first.db")
	require.NoError(t, err, out)
	out, err = backup(nil, "first.db")
	require.Error(t, err)
	require.Contains(t, out, "first.db exists")

	other, err := keyring.Generate("k9")
	require.NoError(t, err)
	out, err = backup([]string{"KEELPAY_ENCRYPTION_KEY=" + keyring.Format(other)}, "wrongkey.db")
	require.Error(t, err)
	require.Contains(t, out, "does not open with the encryption keys")
	_, statErr := os.Stat(filepath.Join(dir, "wrongkey.db"))
	require.ErrorIs(t, statErr, os.ErrNotExist, "a copy that does not open with the keys is not left behind")

	out, err = backup(nil, "-db", "missing.db", "x.db")
	require.Error(t, err)
	require.Contains(t, out, "encryption key")

	out, err = backup(nil, "-db", "postgres://u@127.0.0.1/db", "pg.db")
	require.Error(t, err)
	require.Contains(t, out, "pg_dump")
}
