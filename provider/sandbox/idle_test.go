package sandbox

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
)

func TestIdleTimeDefault(t *testing.T) {
	t.Parallel()
	require.Equal(t, IdleTimeDefault, Config{}.WithDefaults().IdleTime)
}

// The connection to a sandbox file closes after IdleTime unused, freeing
// its page cache, and opens again for the next call with every answer
// kept; an in-memory sandbox keeps its connection, which holds its data.
func TestIdleConnectionOfAFileClosesAndReopens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	charge := func(s *Sandbox, attempt string) {
		t.Helper()
		got, err := s.Charge(ctx, provider.ChargeRequest{MerchantID: "merch_idle", AttemptID: attempt, Amount: 1234, Currency: "EUR",
			NewCard: &provider.SaveCardRequest{MerchantID: "merch_idle", Number: CardVisa, ExpMonth: 12, ExpYear: 2035, CVC: "123", Name: "Jane Roe"}})
		require.NoError(t, err)
		require.Equal(t, provider.ChargeSucceeded, got.Status)
	}
	file, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "sandbox.db"), IdleTime: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { file.Close() })
	mem, err := Open(ctx, Config{IdleTime: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { mem.Close() })

	charge(file, "att_1")
	charge(mem, "att_1")
	require.Eventually(t, func() bool {
		st := file.db.Stats()
		return st.OpenConnections == 0 && st.MaxIdleTimeClosed >= 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, mem.db.Stats().OpenConnections)
	require.Zero(t, mem.db.Stats().MaxIdleTimeClosed)

	for _, s := range []*Sandbox{file, mem} {
		charge(s, "att_2")
		st, err := s.ReadStats()
		require.NoError(t, err)
		require.Equal(t, map[string]int{"att_1": 1, "att_2": 1}, st.ChargesByAttempt)
	}
}
