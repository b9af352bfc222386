package refserver

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
)

// TestClockSkewHook: the test hook is refused outside sandbox mode and
// with a file it cannot read, and a change of the file moves the clock at
// once.
func TestClockSkewHook(t *testing.T) {
	t.Parallel()
	log := newLogger("text", io.Discard)
	path := filepath.Join(t.TempDir(), "skew")
	env := func(name string) string {
		if name == envTestClockSkewFile {
			return path
		}
		return ""
	}
	_, err := machineClock(env, false, log)
	require.ErrorContains(t, err, "KEELPAY_TEST_CLOCK_SKEW_FILE is a test hook of sandbox mode only")
	_, err = machineClock(env, true, log)
	require.ErrorIs(t, err, fs.ErrNotExist)
	setSkew(t, path, "two minutes")
	_, err = machineClock(env, true, log)
	require.ErrorContains(t, err, "invalid duration")

	c, err := machineClock(func(string) string { return "" }, false, log)
	require.NoError(t, err)
	require.Equal(t, keelpay.SystemClock{}, c, "without the hook: the system clock")

	setSkew(t, path, "-48h")
	c, err = machineClock(env, true, log)
	require.NoError(t, err)
	require.True(t, c.Now().Before(time.Now().Add(-47*time.Hour)), "two days behind: %v", c.Now())
	setSkew(t, path, "48h")
	require.True(t, c.Now().After(time.Now().Add(47*time.Hour)), "jumped two days ahead: %v", c.Now())
}

func setSkew(t *testing.T, path, offset string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(offset+"\n"), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}
