package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
)

// TestEventJSONMatchesEncodingJSON: the hand-written rendering of an event
// says what encoding/json said of the stored envelope and its delivery.
func TestEventJSONMatchesEncodingJSON(t *testing.T) {
	type deliveryJSON struct {
		Status         keelpay.DeliveryStatus `json:"status"`
		Attempts       int                    `json:"attempts"`
		LastAttemptAt  *string                `json:"last_attempt_at"`
		NextAttemptAt  *string                `json:"next_attempt_at"`
		LastStatusCode *int                   `json:"last_status_code"`
		LastFailure    *string                `json:"last_failure"`
	}
	at := time.Date(2026, 11, 22, 21, 30, 5, 123, time.FixedZone("x", 3600))
	str := func(s string) *string { return &s }
	code := 503
	cases := []struct {
		d    keelpay.Delivery
		want deliveryJSON
	}{
		{keelpay.Delivery{Status: keelpay.DeliveryPending}, deliveryJSON{Status: keelpay.DeliveryPending}},
		{keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 2, LastAttemptAt: at, NextAttemptAt: at.Add(time.Minute),
			LastStatusCode: 503, LastFailure: keelpay.FailureHTTPStatus},
			deliveryJSON{Status: keelpay.DeliveryPending, Attempts: 2, LastAttemptAt: str("2026-11-22T20:30:05Z"),
				NextAttemptAt: str("2026-11-22T20:31:05Z"), LastStatusCode: &code, LastFailure: str(string(keelpay.FailureHTTPStatus))}},
		{keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: 7, LastFailure: "odd \"failure\" <&>"},
			deliveryJSON{Status: keelpay.DeliveryFailed, Attempts: 7, LastFailure: str("odd \"failure\" <&>")}},
	}
	for _, c := range cases {
		e := &keelpay.Event{Body: []byte(`{"id":"evt_1","data":{"note":"<b>&</b>","n":[1, 2]}}` + "\n"), Delivery: c.d}
		var got, want map[string]any
		require.NoError(t, json.Unmarshal(eventJSON(e), &got))
		d, err := json.Marshal(c.want)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal([]byte(`{"id":"evt_1","data":{"note":"<b>&</b>","n":[1,2]},"delivery":`+string(d)+`}`), &want))
		require.Equal(t, want, got)
	}
}
