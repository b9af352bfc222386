package stores_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// checkFails is a provider whose application check fails with err.
type checkFails struct {
	provider.Provider
	err error
}

func (c checkFails) CheckApplication(context.Context, provider.Credentials) (*provider.Application, error) {
	return nil, c.err
}

// checkHangs is a provider whose application check never answers.
type checkHangs struct{ provider.Provider }

func (checkHangs) CheckApplication(ctx context.Context, _ provider.Credentials) (*provider.Application, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func setup(t *testing.T) (storage.Storage, *keelpaytest.Clock, *sandbox.Sandbox) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	return db, clock, sandbox.New(sandbox.Config{Clock: clock})
}

var params = stores.SetupParams{ClientID: "app_shop", ClientSecret: "secret_shop", WebhookURL: "https://shop.example/hooks"}

func TestSetupAndAuthenticate(t *testing.T) {
	t.Parallel()
	db, clock, sb := setup(t)
	ctx := context.Background()
	s := mustNew(stores.New(stores.Config{Clock: clock, Provider: sb, Storage: db}))
	res, err := s.Setup(ctx, params)
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Regexp(t, `^sk_`, res.SecretKey)

	st, err := s.Authenticate(ctx, res.SecretKey)
	require.NoError(t, err)
	require.Equal(t, res.Store.ID, st.ID)
	_, err = s.Authenticate(ctx, "sk_wrong")
	require.Equal(t, keelpay.CodeInvalidAPIKey, keelpay.ErrorCode(err))

	_, err = s.Setup(ctx, params)
	require.Equal(t, keelpay.CodeStoreAlreadyEnabled, keelpay.ErrorCode(err), "without its key the store is not shown again")

	rotate := params
	rotate.StoreID, rotate.RotateSecretKey = st.ID, true
	again, err := s.Setup(ctx, rotate)
	require.NoError(t, err)
	require.False(t, again.Created)
	require.Regexp(t, `^sk_`, again.SecretKey)
	_, err = s.Authenticate(ctx, res.SecretKey)
	require.Equal(t, keelpay.CodeInvalidAPIKey, keelpay.ErrorCode(err), "the old key stops working")
}

func TestWebhookAddressPolicy(t *testing.T) {
	t.Parallel()
	db, clock, sb := setup(t)
	local := params
	local.WebhookURL = "http://127.0.0.1:9000/hooks"
	_, err := mustNew(stores.New(stores.Config{Clock: clock, Provider: sb, Storage: db})).Setup(context.Background(), local)
	require.Equal(t, keelpay.CodeInvalidRequest, keelpay.ErrorCode(err))
	_, err = mustNew(stores.New(stores.Config{AllowInsecureWebhooks: true, Clock: clock, Provider: sb, Storage: db})).Setup(context.Background(), local)
	require.NoError(t, err)
}

func TestProviderAnswersBecomeSetupCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		err   error
		code  keelpay.Code
		after time.Duration
	}{
		{"unavailable, the provider's wait", &provider.Error{Kind: provider.KindUnavailable, RetryAfter: 9 * time.Second}, keelpay.CodeProviderAPIUnavailable, 9 * time.Second},
		{"unavailable, no wait given", &provider.Error{Kind: provider.KindUnavailable}, keelpay.CodeProviderAPIUnavailable, 30 * time.Second},
		{"an unknown outcome changes nothing here", &provider.Error{Kind: provider.KindOutcomeUnknown}, keelpay.CodeProviderAPIUnavailable, 30 * time.Second},
		{"access pending", &provider.Error{Kind: provider.KindAccessPending, RetryAfter: 2 * time.Minute}, keelpay.CodePlatformAccessPending, 2 * time.Minute},
		{"access pending, no wait given", &provider.Error{Kind: provider.KindAccessPending}, keelpay.CodePlatformAccessPending, time.Minute},
		{"bad credentials", &provider.Error{Kind: provider.KindInvalidCredentials}, keelpay.CodeInvalidCredentials, 0},
		{"no such application", &provider.Error{Kind: provider.KindAppNotFound}, keelpay.CodeClientAppNotFound, 0},
		{"roles missing", &provider.Error{Kind: provider.KindMissingRoles, MissingRoles: []string{"refunds"}}, keelpay.CodeMissingRoles, 0},
		{"certificate", &provider.Error{Kind: provider.KindCertificateMismatch}, keelpay.CodePlatformCertificateMismatch, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, clock, sb := setup(t)
			_, err := mustNew(stores.New(stores.Config{Clock: clock, Provider: checkFails{sb, tc.err}, Storage: db})).Setup(context.Background(), params)
			e, ok := keelpay.AsError(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, tc.after, e.RetryAfter)
		})
	}
}

func TestApplicationCheckHasATimeout(t *testing.T) {
	t.Parallel()
	db, clock, sb := setup(t)
	// Without the time-out this would wait forever.
	_, err := mustNew(stores.New(stores.Config{CallTimeout: time.Millisecond, Clock: clock, Provider: checkHangs{sb}, Storage: db})).
		Setup(context.Background(), params)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
