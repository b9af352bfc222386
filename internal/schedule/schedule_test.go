package schedule

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		after, want time.Duration // since the attempt
	}{
		{0, time.Minute},
		{time.Minute - time.Nanosecond, time.Minute},
		{time.Minute, 5 * time.Minute},
		{4 * time.Minute, 5 * time.Minute},
		{5 * time.Minute, 15 * time.Minute},
		{15 * time.Minute, time.Hour},
		{59 * time.Minute, time.Hour},
		{time.Hour, 7 * time.Hour},
		{7 * time.Hour, 13 * time.Hour},
		{8 * time.Hour, 13 * time.Hour},
		{30 * 24 * time.Hour, 30*24*time.Hour + time.Hour}, // 1h + 6h*k after the attempt
	} {
		if got := Next(t0, t0.Add(tc.after)).Sub(t0); got != tc.want {
			t.Errorf("Next at +%v = +%v, want +%v", tc.after, got, tc.want)
		}
	}
}
