package events_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// metered answers 204 to a request only when the test hands it a token,
// and counts the requests in flight.
type metered struct {
	tokens chan struct{}

	mu       sync.Mutex
	changed  *sync.Cond
	inFlight int
	most     int
	answered int
}

func (m *metered) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.inFlight++
	m.most = max(m.most, m.inFlight)
	m.changed.Broadcast()
	m.mu.Unlock()
	select {
	case <-m.tokens:
	case <-r.Context().Done():
	}
	m.mu.Lock()
	m.inFlight--
	m.answered++
	m.changed.Broadcast()
	m.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// A store with a backlog and a healthy receiver starts at PerStoreStart
// attempts in flight and, as they succeed, grows by one per success
// (doubling per round) up to PerStore, never beyond. On SQLite, whose
// claims never overlap, so that the caps are exact.
func TestDispatcherStoreGrowsToItsCapWithSuccesses(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	m := &metered{tokens: make(chan struct{}, 1024)}
	m.changed = sync.NewCond(&m.mu)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	store := storagetest.NewStoreRecord(time.Now().UTC())
	store.WebhookURL = srv.URL + "/webhooks"
	require.NoError(t, db.StoreInsert(t.Context(), store))
	insertEvents(t, db, store, 400, time.Now().UTC())

	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: db,
		AttemptTimeout: 5 * time.Minute, Lease: 10 * time.Minute}))

	stop := runDispatcher(t, d)
	answerAll := sync.OnceFunc(func() { close(m.tokens) })
	t.Cleanup(answerAll) // before stopping, should the test fail
	released := 0
	await := func(want int) {
		t.Helper()
		expired := false
		timer := time.AfterFunc(time.Minute, func() {
			m.mu.Lock()
			expired = true
			m.changed.Broadcast()
			m.mu.Unlock()
		})
		defer timer.Stop()
		m.mu.Lock()
		defer m.mu.Unlock()
		for m.answered != released || m.inFlight != want {
			require.LessOrEqual(t, m.most, want, "attempts in flight at once")
			require.False(t, expired, "waited a minute for %d attempts in flight: %d (%d of %d answered)",
				want, m.inFlight, m.answered, released)
			m.changed.Wait()
		}
		require.Equal(t, want, m.most, "attempts in flight at once")
	}
	for want := events.PerStoreStartDefault; ; want = min(2*want, events.PerStoreDefault) {
		await(want)
		if want == events.PerStoreDefault {
			break
		}
		for range want {
			m.tokens <- struct{}{}
		}
		released += want
	}
	// At the cap it stays there.
	for range events.PerStoreDefault {
		m.tokens <- struct{}{}
	}
	released += events.PerStoreDefault
	await(events.PerStoreDefault)
	answerAll()
	stop()
}
