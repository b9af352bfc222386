package refserver

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/keelpay/keelpay/httpapi"
)

// admissionFlags defines the flags of the API's admission limits into c:
// how many requests of each class are worked on at once, how long one
// waits for a slot and the Retry-After of a shed answer
// (docs/operating.md, "Overload"). Each flag starts from its environment
// variable when that is set (a flag on the command line wins), else from
// httpapi's default; -1 turns a class's limit off. A variable that does
// not parse is an error naming it.
func admissionFlags(fs *flag.FlagSet, getenv func(string) string, c *httpapi.AdmissionConfig) error {
	c.Wait, c.RetryAfter = httpapi.AdmissionWaitDefault, httpapi.AdmissionRetryAfterDefault
	type def struct {
		name, env, usage string
		value            flag.Value
	}
	limit := func(name, env string, v *int, d int, what string) def {
		*v = d
		return def{name, env, fmt.Sprintf("%s worked on at once; more wait up to -limit-wait, then get 429 (-1: no limit) (env %s)", what, env), intValue{v}}
	}
	var errs []error
	for _, f := range []def{
		limit("limit-payments", "KEELPAY_LIMIT_PAYMENTS", &c.Payments, httpapi.AdmissionPaymentsDefault, "payment writes (intents, refunds, card sessions; confirms apart)"),
		limit("limit-confirms", "KEELPAY_LIMIT_CONFIRMS", &c.Confirms, httpapi.AdmissionConfirmsDefault, "confirms of intents with the secret key"),
		limit("limit-writes", "KEELPAY_LIMIT_WRITES", &c.Writes, httpapi.AdmissionWritesDefault, "other writes (setup, webhook tests, redeliveries)"),
		limit("limit-reads", "KEELPAY_LIMIT_READS", &c.Reads, httpapi.AdmissionReadsDefault, "reads with the secret key"),
		limit("limit-browser", "KEELPAY_LIMIT_BROWSER", &c.Browser, httpapi.AdmissionBrowserDefault, "the browser's requests (publishable key, card field)"),
		{"limit-queue", "KEELPAY_LIMIT_QUEUE", "requests of one class that may wait for a slot; more are shed (0: four times the class's limit) (env KEELPAY_LIMIT_QUEUE)", intValue{&c.Queue}},
		{"limit-hold", "KEELPAY_LIMIT_HOLD", fmt.Sprintf("shed requests of one class answered only when -limit-wait is over; more are answered at once (-1: none) (env KEELPAY_LIMIT_HOLD) (default %d)", httpapi.AdmissionHoldDefault), intValue{&c.Hold}},
		{"limit-wait", "KEELPAY_LIMIT_WAIT", "longest wait of a request for a slot of its class before it gets 429 (env KEELPAY_LIMIT_WAIT)", durationValue{&c.Wait}},
		{"retry-after", "KEELPAY_RETRY_AFTER", "Retry-After of a request shed by the limits, rounded up to whole seconds (env KEELPAY_RETRY_AFTER)", durationValue{&c.RetryAfter}},
	} {
		fs.Var(f.value, f.name, f.usage)
		if env := getenv(f.env); env != "" {
			if err := f.value.Set(env); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.env, err))
			}
		}
	}
	return errors.Join(errs...)
}

// intValue is an int flag.
type intValue struct{ v *int }

func (i intValue) String() string {
	if i.v == nil {
		return "0"
	}
	return strconv.Itoa(*i.v)
}

func (i intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not a whole number: %q", s)
	}
	*i.v = n
	return nil
}

// durationValue is a duration flag that refuses negative durations.
type durationValue struct{ v *time.Duration }

func (d durationValue) String() string {
	if d.v == nil {
		return "0s"
	}
	return d.v.String()
}

func (d durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("not a duration such as 500ms or 2s: %q", s)
	}
	*d.v = v
	return nil
}
