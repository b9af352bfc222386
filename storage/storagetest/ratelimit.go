package storagetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/storage"
)

func testRateLimit(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("SlidingWindow", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		l := storage.RateLimit{Key: "k", Limit: 3, Window: time.Minute}
		for i := range 3 {
			wait, err := db.RateLimitTake(ctx, t0.Add(time.Duration(i)*10*time.Second), l)
			require.NoError(t, err)
			require.Zero(t, wait, "hit %d", i)
		}
		// Full: the first hit (t0) leaves the window at t0+60s.
		wait, err := db.RateLimitTake(ctx, t0.Add(30*time.Second), l)
		require.NoError(t, err)
		require.Equal(t, 30*time.Second, wait)
		// A refused hit is not counted: at t0+60s there is room for one.
		wait, err = db.RateLimitTake(ctx, t0.Add(60*time.Second), l)
		require.NoError(t, err)
		require.Zero(t, wait)
		wait, err = db.RateLimitTake(ctx, t0.Add(60*time.Second), l)
		require.NoError(t, err)
		require.Equal(t, 10*time.Second, wait)
	})

	t.Run("AllOrNothing", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		perClient := storage.RateLimit{Key: "client:a", Limit: 5, Window: time.Minute}
		total := storage.RateLimit{Key: "total", Limit: 2, Window: time.Minute}
		for range 2 {
			wait, err := db.RateLimitTake(ctx, t0, perClient, total)
			require.NoError(t, err)
			require.Zero(t, wait)
		}
		wait, err := db.RateLimitTake(ctx, t0, perClient, total)
		require.NoError(t, err)
		require.Equal(t, time.Minute, wait)
		// The refused call recorded no hit for the client: three more fit.
		other := storage.RateLimit{Key: "total-2", Limit: 10, Window: time.Minute}
		for range 3 {
			wait, err := db.RateLimitTake(ctx, t0, perClient, other)
			require.NoError(t, err)
			require.Zero(t, wait)
		}
		wait, err = db.RateLimitTake(ctx, t0, perClient, other)
		require.NoError(t, err)
		require.Equal(t, time.Minute, wait)
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		l := storage.RateLimit{Key: "c", Limit: 10, Window: time.Minute}
		var mu sync.Mutex
		allowed := 0
		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				wait, err := db.RateLimitTake(ctx, t0, l)
				if err != nil {
					t.Error(err)
					return
				}
				if wait == 0 {
					mu.Lock()
					allowed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Equal(t, 10, allowed)
	})

	t.Run("DeleteExpired", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		short := storage.RateLimit{Key: "short", Limit: 10, Window: time.Minute}
		long := storage.RateLimit{Key: "long", Limit: 10, Window: time.Hour}
		for i := range 5 {
			wait, err := db.RateLimitTake(ctx, t0.Add(time.Duration(i)*time.Second), short, long)
			require.NoError(t, err)
			require.Zero(t, wait)
		}
		// At t0+62s the short hits of t0..t0+2s have left their window;
		// no long hit has.
		n, err := db.RateLimitDeleteExpired(ctx, t0.Add(62*time.Second), 2)
		require.NoError(t, err)
		require.Equal(t, 2, n, "bounded by limit")
		n, err = db.RateLimitDeleteExpired(ctx, t0.Add(62*time.Second), 100)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, err = db.RateLimitDeleteExpired(ctx, t0.Add(62*time.Second), 100)
		require.NoError(t, err)
		require.Zero(t, n)
		// The hits that still count still count: 2 short hits remain.
		for range 8 {
			wait, err := db.RateLimitTake(ctx, t0.Add(62*time.Second), short)
			require.NoError(t, err)
			require.Zero(t, wait)
		}
		wait, err := db.RateLimitTake(ctx, t0.Add(62*time.Second), short)
		require.NoError(t, err)
		require.Equal(t, time.Second, wait, "the hit of t0+3s leaves first")
		n, err = db.RateLimitDeleteExpired(ctx, t0.Add(time.Hour+5*time.Second), 100)
		require.NoError(t, err)
		require.Equal(t, 5+10, n, "every hit, long and short")
	})
}
