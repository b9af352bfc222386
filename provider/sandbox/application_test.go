package sandbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

func TestCheckApplication(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, clientID, secret string
		want                   *provider.Application
		wantErr                *provider.Error
	}{
		{name: "ok", clientID: "app_shop1", secret: "secret_shop1",
			want: &provider.Application{MerchantID: "merch_shop1", Currency: "EUR"}},
		{name: "usd", clientID: "app_shop_usd", secret: "secret_shop_usd",
			want: &provider.Application{MerchantID: "merch_shop_usd", Currency: "USD"}},
		{name: "gbp in the middle", clientID: "app_gbp_Shop_2", secret: "secret_gbp_Shop_2",
			want: &provider.Application{MerchantID: "merch_gbp_Shop_2", Currency: "GBP"}},
		{name: "usd wins over gbp", clientID: "app_x_gbp_usd", secret: "secret_x_gbp_usd",
			want: &provider.Application{MerchantID: "merch_x_gbp_usd", Currency: "USD"}},
		{name: "part must end at underscore", clientID: "app_shop_usda", secret: "secret_shop_usda",
			want: &provider.Application{MerchantID: "merch_shop_usda", Currency: "EUR"}},
		{name: "part must end at underscore, outcome", clientID: "app_x_not_founder", secret: "secret_x_not_founder",
			want: &provider.Application{MerchantID: "merch_x_not_founder", Currency: "EUR"}},
		{name: "wrong secret", clientID: "app_shop1", secret: "secret_shop2",
			wantErr: &provider.Error{Kind: provider.KindInvalidCredentials}},
		{name: "empty secret", clientID: "app_shop1", secret: "",
			wantErr: &provider.Error{Kind: provider.KindInvalidCredentials}},
		{name: "no suffix", clientID: "app_", secret: "secret_",
			wantErr: &provider.Error{Kind: provider.KindInvalidCredentials}},
		{name: "bad character", clientID: "app_sh-op", secret: "secret_sh-op",
			wantErr: &provider.Error{Kind: provider.KindInvalidCredentials}},
		{name: "no prefix", clientID: "shop1", secret: "secret_shop1",
			wantErr: &provider.Error{Kind: provider.KindInvalidCredentials}},
		{name: "missing roles", clientID: "app_x_missing_roles", secret: "secret_x_missing_roles",
			wantErr: &provider.Error{Kind: provider.KindMissingRoles, MissingRoles: []string{"payments", "refunds"}}},
		{name: "not found", clientID: "app_x_not_found", secret: "secret_x_not_found",
			wantErr: &provider.Error{Kind: provider.KindAppNotFound}},
		{name: "access pending", clientID: "app_access_pending", secret: "secret_access_pending",
			wantErr: &provider.Error{Kind: provider.KindAccessPending, RetryAfter: 60 * time.Second}},
		{name: "certificate mismatch", clientID: "app_x_cert_mismatch_usd", secret: "secret_x_cert_mismatch_usd",
			wantErr: &provider.Error{Kind: provider.KindCertificateMismatch}},
		{name: "unavailable", clientID: "app_x_unavailable", secret: "secret_x_unavailable",
			wantErr: &provider.Error{Kind: provider.KindUnavailable, RetryAfter: 30 * time.Second}},
		{name: "credentials before outcome", clientID: "app_x_unavailable", secret: "secret_x",
			wantErr: &provider.Error{Kind: provider.KindInvalidCredentials}},
		{name: "unavailable before not found", clientID: "app_x_not_found_unavailable", secret: "secret_x_not_found_unavailable",
			wantErr: &provider.Error{Kind: provider.KindUnavailable, RetryAfter: 30 * time.Second}},
		{name: "not found before certificate", clientID: "app_x_cert_mismatch_not_found", secret: "secret_x_cert_mismatch_not_found",
			wantErr: &provider.Error{Kind: provider.KindAppNotFound}},
		{name: "certificate before access", clientID: "app_x_access_pending_cert_mismatch", secret: "secret_x_access_pending_cert_mismatch",
			wantErr: &provider.Error{Kind: provider.KindCertificateMismatch}},
		{name: "access before roles", clientID: "app_x_missing_roles_access_pending", secret: "secret_x_missing_roles_access_pending",
			wantErr: &provider.Error{Kind: provider.KindAccessPending, RetryAfter: 60 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			got, err := b.sb.CheckApplication(b.ctx, provider.Credentials{ClientID: tt.clientID, ClientSecret: tt.secret})
			if tt.wantErr != nil {
				e := requireKind(t, tt.wantErr.Kind, err)
				require.NotEmpty(t, e.Message)
				e.Message = ""
				requireDiff(t, tt.wantErr, e)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			requireDiff(t, tt.want, got)
		})
	}
}

func TestCheckApplicationIsStable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	creds := provider.Credentials{ClientID: "app_shop1", ClientSecret: "secret_shop1"}
	first, err := b.sb.CheckApplication(b.ctx, creds)
	require.NoError(t, err)
	again, err := sandbox.New(sandbox.Config{}).CheckApplication(b.ctx, creds)
	require.NoError(t, err)
	requireDiff(t, first, again)
}

func TestSetApplication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	check := func(clientID, secret string) (*provider.Application, error) {
		return b.sb.CheckApplication(b.ctx, provider.Credentials{ClientID: clientID, ClientSecret: secret})
	}

	b.sb.SetApplication("client-42", sandbox.AppBehavior{ClientSecret: "s3cret", Currency: "usd", MerchantID: "m42"})
	got, err := check("client-42", "s3cret")
	require.NoError(t, err)
	requireDiff(t, &provider.Application{MerchantID: "m42", Currency: "USD"}, got)
	_, err = check("client-42", "secret_client-42")
	requireKind(t, provider.KindInvalidCredentials, err)

	// The name no longer decides for an app_ id set here; defaults follow it.
	b.sb.SetApplication("app_shop_usd", sandbox.AppBehavior{Outcome: provider.KindMissingRoles})
	_, err = check("app_shop_usd", "secret_shop_usd")
	e := requireKind(t, provider.KindMissingRoles, err)
	require.Equal(t, []string{"payments", "refunds"}, e.MissingRoles)

	b.sb.SetApplication("app_shop2", sandbox.AppBehavior{Outcome: provider.KindMissingRoles, MissingRoles: []string{"refunds"}})
	_, err = check("app_shop2", "secret_shop2")
	e = requireKind(t, provider.KindMissingRoles, err)
	require.Equal(t, []string{"refunds"}, e.MissingRoles)

	b.sb.SetApplication("app_shop3", sandbox.AppBehavior{Outcome: provider.KindAccessPending})
	_, err = check("app_shop3", "secret_shop3")
	e = requireKind(t, provider.KindAccessPending, err)
	require.Equal(t, sandbox.AccessPendingRetryAfter, e.RetryAfter)

	b.sb.SetApplication("app_shop4", sandbox.AppBehavior{Outcome: provider.KindUnavailable, RetryAfter: 5 * time.Second})
	_, err = check("app_shop4", "secret_shop4")
	e = requireKind(t, provider.KindUnavailable, err)
	require.Equal(t, 5*time.Second, e.RetryAfter)

	b.sb.SetApplication("app_shop5", sandbox.AppBehavior{})
	got, err = check("app_shop5", "secret_shop5")
	require.NoError(t, err)
	requireDiff(t, &provider.Application{MerchantID: "merch_shop5", Currency: "EUR"}, got)
}
