package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHelpMentionsBackup: refserver -h names the backup subcommand (and
// how to see its flags), as well as the server's own flags.
func TestHelpMentionsBackup(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(refserver, "-h").CombinedOutput()
	require.Error(t, err, "-h exits with the flag package's status 2")
	require.Contains(t, string(out), "refserver backup [flags] DEST")
	require.Contains(t, string(out), "refserver backup -h")
	require.Contains(t, string(out), "-sandbox-db", "the server's flags are still listed")
}

// TestBackupFlagsAfterDest: refserver backup DEST -db X works as
// refserver backup -db X DEST does; two destinations are refused with a
// message that shows the order.
func TestBackupFlagsAfterDest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, []string{"KEELPAY_ADDR=127.0.0.1:0"}, "-db", "shop.db")
	setupShop(t, s, "app_backupargs", "http://127.0.0.1:9/webhooks")
	backup := func(args ...string) (string, error) {
		cmd := exec.Command(refserver, append([]string{"backup"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := backup(filepath.Join("out", "copy.db"), "-db", "shop.db")
	require.NoError(t, err, "%s", out)
	require.Contains(t, out, "copied shop.db to out/copy.db (integrity ok")
	require.Contains(t, out, "copied shop.sandbox.db to out/copy.sandbox.db")
	_, err = os.Stat(filepath.Join(dir, "out", "copy.db"))
	require.NoError(t, err)

	out, err = backup("-db", "shop.db", "a.db", "b.db")
	require.Error(t, err)
	require.Contains(t, out, "backup needs exactly one destination path, got 2: refserver backup [-db PATH] [-key-file FILE] [-sandbox-db PATH] DEST")
	out, err = backup("-db", "shop.db")
	require.Error(t, err)
	require.Contains(t, out, "got 0")
}
