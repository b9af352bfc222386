package refserver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/keelpay/keelpay/service"
)

// parseRetention reads a retention period: a number of days ("30d"), a Go
// duration ("720h"), or "forever".
func parseRetention(s string) (time.Duration, error) {
	if s == "forever" {
		return service.KeepForever, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a period: give days (30d), a duration (720h) or forever", s)
		}
	}
	if d < service.RetentionMin {
		return 0, fmt.Errorf("%q is shorter than %v: give at least an hour, or forever", s, service.RetentionMin)
	}
	return d, nil
}
