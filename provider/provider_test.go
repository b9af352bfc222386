package provider_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
)

func TestIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"unknown attempt", provider.ErrUnknownAttempt, false},
		{"wrapped unknown attempt", fmt.Errorf("lookup: %w", provider.ErrUnknownAttempt), false},
		{"unavailable", &provider.Error{Kind: provider.KindUnavailable}, false},
		{"access pending", &provider.Error{Kind: provider.KindAccessPending}, false},
		{"card rejected", &provider.Error{Kind: provider.KindCardRejected}, false},
		{"outcome unknown", &provider.Error{Kind: provider.KindOutcomeUnknown}, true},
		{"wrapped outcome unknown", fmt.Errorf("charge: %w", &provider.Error{Kind: provider.KindOutcomeUnknown}), true},
		{"deadline", context.DeadlineExceeded, true},
		{"other", errors.New("connection reset"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, provider.IsOutcomeUnknown(tt.err))
		})
	}
}

func TestKindOf(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("setup: %w", &provider.Error{Kind: provider.KindMissingRoles, MissingRoles: []string{"refunds"}})
	assert.Equal(t, provider.KindMissingRoles, provider.KindOf(err))
	assert.Equal(t, provider.ErrorKind(""), provider.KindOf(errors.New("other")))
	assert.Equal(t, provider.ErrorKind(""), provider.KindOf(nil))

	var e *provider.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, []string{"refunds"}, e.MissingRoles)
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "provider: unavailable", (&provider.Error{Kind: provider.KindUnavailable}).Error())
	assert.Equal(t, "provider: unavailable: down", (&provider.Error{Kind: provider.KindUnavailable, Message: "down", RetryAfter: time.Second}).Error())
}

func TestSecretsAreNotPrinted(t *testing.T) {
	t.Parallel()
	creds := provider.Credentials{ClientID: "app_shop1", ClientSecret: "secret_shop1"}
	card := provider.SaveCardRequest{MerchantID: "merch_1", Number: "4242424242424242", ExpMonth: 12, ExpYear: 2030, CVC: "987", Name: "Jane Roe"}

	// The record's time is left out: its digits could hold any short value
	// searched for below, such as the CVC.
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime}))
	log.Info("setup", "credentials", creds, "card", card)
	for _, printed := range []string{
		fmt.Sprint(creds), fmt.Sprintf("%+v", creds), fmt.Sprintf("%#v", creds),
		fmt.Sprint(card), fmt.Sprintf("%+v", card), fmt.Sprintf("%#v", card),
		logs.String(),
	} {
		assert.NotContains(t, printed, "secret_shop1")
		assert.NotContains(t, printed, "4242424242424242")
		assert.NotContains(t, printed, "987")
		assert.NotContains(t, printed, "Jane")
	}
	assert.Contains(t, fmt.Sprint(creds), "app_shop1")
	assert.Contains(t, fmt.Sprint(card), "4242")
	assert.Contains(t, logs.String(), `"last4":"4242"`)
}

// dropTime removes the time from every log record.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
