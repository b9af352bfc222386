package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring"
)

func TestKeyFileBesideTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_ENCRYPTION_KEY=", "KEELPAY_KEY_FILE="}
	s := start(t, dir, env)
	r := must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_keys", "client_secret": "secret_keys", "webhook_url": "http://127.0.0.1:9/hooks"})
	require.Equal(t, 201, r.Status, "%v", r.Body)
	logs := s.Stop(t)
	require.Equal(t, 1, strings.Count(logs, "created a new encryption key file"), logs)

	keyFile := filepath.Join(dir, "keelpay.db.key")
	fi, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "readable by its owner only")
	_, err = keyring.ReadFile(keyFile)
	require.NoError(t, err)

	// The next start uses the file and says nothing about it.
	s = start(t, dir, env)
	r = must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_keys", "client_secret": "secret_keys", "webhook_url": "http://127.0.0.1:9/hooks"})
	require.Equal(t, "store_already_enabled", r.Code(), "the store is there: %v", r.Body)
	require.NotContains(t, s.Stop(t), "created a new encryption key file")

	// A copy of the database without its key file opens nothing: the
	// server makes up a new key of the same id, and the database says it
	// is not the key that sealed it.
	copyDir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(dir, "keelpay.db"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(copyDir, "keelpay.db"), data, 0o600))
	out, err := runExpectingFailure(copyDir, env)
	require.Error(t, err)
	require.Contains(t, out, `the key with id "k1" is not the key this database knows`)
	// ... and the key it tried is not left beside the copy, where it would
	// stand in for the real one: the error says what to put there.
	require.Contains(t, out, "there is no key file keelpay.db.key, so a new key was tried and not saved")
	_, err = os.Stat(filepath.Join(copyDir, "keelpay.db.key"))
	require.ErrorIs(t, err, os.ErrNotExist, "a failed start leaves no key file")
	// With the right key file beside it, the copy serves.
	keys, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(copyDir, "keelpay.db.key"), keys, 0o600))
	s = start(t, copyDir, env)
	r = must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_keys", "client_secret": "secret_keys", "webhook_url": "http://127.0.0.1:9/hooks"})
	require.Equal(t, "store_already_enabled", r.Code(), "%v", r.Body)
	require.NotContains(t, s.Stop(t), "created a new encryption key file")
	require.NoError(t, os.Remove(filepath.Join(copyDir, "keelpay.db.key")))

	// Nor with some other key given.
	k, err := keyring.Generate("other")
	require.NoError(t, err)
	out, err = runExpectingFailure(copyDir, append(env, "KEELPAY_ENCRYPTION_KEY="+keyring.Format(k)))
	require.Error(t, err)
	require.Contains(t, out, "start with the keyring it was sealed with")
}

func TestKeyConfiguration(t *testing.T) {
	t.Parallel()
	// PostgreSQL is shared by several processes: a key must be given.
	out, err := runExpectingFailure(t.TempDir(), []string{"KEELPAY_ENCRYPTION_KEY=", "KEELPAY_KEY_FILE="},
		"-addr", "127.0.0.1:0", "-db", "postgres://nobody@127.0.0.1:1/x?connect_timeout=1")
	require.Error(t, err)
	require.Contains(t, out, "a PostgreSQL database needs an encryption key")

	// A key file others can read is refused.
	dir := t.TempDir()
	k, err := keyring.Generate("k1")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keys"), []byte(keyring.Format(k)), 0o644))
	out, err = runExpectingFailure(dir, []string{"KEELPAY_ENCRYPTION_KEY="}, "-addr", "127.0.0.1:0", "-key-file", "keys")
	require.Error(t, err)
	require.Contains(t, out, "chmod 600")

	// Both ways at once is ambiguous.
	out, err = runExpectingFailure(dir, []string{"KEELPAY_ENCRYPTION_KEY=" + keyring.Format(k)}, "-addr", "127.0.0.1:0", "-key-file", "keys")
	require.Error(t, err)
	require.Contains(t, out, "not both")

	// -new-key prints a key that parses.
	cmd := exec.Command(refserver, "-new-key")
	line, err := cmd.Output()
	require.NoError(t, err)
	_, err = keyring.Parse(string(line))
	require.NoError(t, err)
}

func runExpectingFailure(dir string, env []string, args ...string) (string, error) {
	if len(args) == 0 {
		args = []string{"-addr", "127.0.0.1:0"}
	}
	cmd := exec.Command(refserver, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
