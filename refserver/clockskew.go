package refserver

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
)

// envTestClockSkewFile is a TEST HOOK, refused outside sandbox mode: it
// names a file holding a Go duration ("2m", "-2m", "0s") added to this
// machine's clock beneath everything else, as a machine whose clock is off
// would be. The file is read again at every reading of the clock (a test
// hook need not be fast), so that a test can make the clock jump at once. It exists because the usual tool for this,
// libfaketime (LD_PRELOAD), does not reach Go programs: Go reads the time
// through the kernel's vDSO without libc
// (https://github.com/wolfcw/libfaketime/issues/195; runtime/sys_linux_amd64.s,
// walltime and nanotime): with Debian's faketime 0.9.10, `faketime -f +30d
// refserver -new-key` still names its key after today. Only the wall clock is skewed, not Go's monotonic
// clock, as with a real machine whose wall clock is wrong or steps.
const envTestClockSkewFile = "KEELPAY_TEST_CLOCK_SKEW_FILE"

// machineClock returns this machine's clock: keelpay.SystemClock, or, with
// the test hook envTestClockSkewFile in sandbox mode, the system clock
// moved by the file's offset.
func machineClock(getenv func(string) string, sandboxMode bool, log *slog.Logger) (keelpay.Clock, error) {
	path := getenv(envTestClockSkewFile)
	if path == "" {
		return keelpay.SystemClock{}, nil
	}
	if !sandboxMode {
		return nil, errors.New(envTestClockSkewFile + " is a test hook of sandbox mode only: unset it")
	}
	c := &skewedClock{path: path}
	if _, err := c.read(); err != nil {
		return nil, fmt.Errorf("%s: %w", envTestClockSkewFile, err)
	}
	log.Warn("TEST HOOK: this machine's clock is skewed by the offset in a file", slog.String("file", path))
	return c, nil
}

// skewedClock is the system clock plus the duration in a file (the test
// hook envTestClockSkewFile). A file that cannot be read or parsed (a test
// writing it) keeps the last offset.
type skewedClock struct {
	path string

	mu     sync.Mutex
	offset time.Duration
}

func (c *skewedClock) read() (time.Duration, error) {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.path, err)
	}
	return d, nil
}

// Now returns the system clock plus the file's offset, in UTC.
func (c *skewedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, err := c.read(); err == nil {
		c.offset = d
	}
	return time.Now().UTC().Add(c.offset)
}
