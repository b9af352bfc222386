package storagetest

import (
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// NewStorage returns a fresh, empty, migrated database that lives until
// the test ends.
type NewStorage func(t *testing.T) storage.Storage

// Run runs the whole suite against the adapter.
func Run(t *testing.T, newStorage NewStorage) {
	t.Helper()
	tests := map[string]func(*testing.T, NewStorage){
		"Stores":        testStores,
		"RateLimit":     testRateLimit,
		"Tx":            testTx,
		"Batch":         testBatch,
		"Events":        testEvents,
		"Deliveries":    testDeliveries,
		"Payments":      testPayments,
		"StartAttempt":  testStartAttempt,
		"Refunds":       testRefunds,
		"Lists":         testLists,
		"Idempotency":   testIdempotency,
		"AttemptChecks": testAttemptChecks,
		"Ping":          testPing,
		"Retention":     testRetention,
		"Fields":        testFields,
	}
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStorage)
		})
	}
}

// t0 is the suite's fixed start time, truncated to what every adapter
// stores (microseconds).
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// NewStoreRecord returns a store record with fresh ids and keys, as setup
// would create it.
func NewStoreRecord(now time.Time) *keelpay.Store {
	id := keelpay.NewID(keelpay.PrefixStore)
	return &keelpay.Store{
		ID:               id,
		ClientID:         "app_" + id[len(keelpay.PrefixStore):],
		ClientSecretHash: "h1:x",
		MerchantID:       "merch_x",
		Currency:         "EUR",
		PublishableKey:   keelpay.NewID(keelpay.PrefixPublishableKey),
		SecretKeyHash:    []byte(keelpay.NewID("hash_")),
		WebhookURL:       "https://store.example/webhooks",
		WebhookSecret:    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Version:          1,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
}
