// Package schedule is when the reconcilers ask the provider again about an
// attempt (a charge or a refund) whose outcome they do not know.
package schedule

import "time"

// Every is the interval of look-ups after the last fixed point of Points.
const Every = 6 * time.Hour

// Points is when, after an attempt, the reconciler asks the provider about
// an outcome it does not know; after the last, every [Every].
var Points = [...]time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}

// Next returns when the reconciler next asks the provider about an attempt
// made at attemptAt whose outcome is unknown at now: the first point of
// [Points] after now, then every [Every].
func Next(attemptAt, now time.Time) time.Time {
	for _, d := range Points {
		if t := attemptAt.Add(d); t.After(now) {
			return t
		}
	}
	last := attemptAt.Add(Points[len(Points)-1])
	return last.Add(Every * (now.Sub(last)/Every + 1))
}
