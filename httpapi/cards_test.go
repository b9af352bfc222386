package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

func TestCardSessionAndCapture(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	r := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer": customerJSON(), "page_origins": []string{"https://SHOP.example:443", "http://localhost:3000"},
	}})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	id := r.str("id")
	require.True(t, keelpay.ValidID(keelpay.PrefixCardSession, id))
	secret := r.str("client_secret")
	require.Regexp(t, "^"+id+"_secret_[0-9A-Za-z]{24}$", secret)
	delete(r.Body, "id")
	delete(r.Body, "client_secret")
	require.Equal(t, map[string]any{
		"object":       "card_session",
		"customer":     customerJSON(),
		"page_origins": []any{"https://shop.example", "http://localhost:3000"},
		"status":       "open",
		"card":         nil,
		"expires_at":   "2026-11-21T10:30:00Z",
		"created_at":   "2026-11-21T10:00:00Z",
	}, r.Body)

	// The browser saves the card.
	b.clock.Advance(time.Minute)
	card := b.capture(t, s, b.do(t, req{method: "GET", path: "/v1/card_sessions/" + id, key: s.sk}), sandbox.CardMastercard)
	require.Equal(t, http.StatusCreated, card.Status, "%s", card.Raw)
	cardID := card.str("id")
	require.True(t, keelpay.ValidID(keelpay.PrefixCard, cardID))
	want := map[string]any{
		"id":           cardID,
		"object":       "card",
		"customer":     map[string]any{"id": custID},
		"card_session": id,
		"brand":        "mastercard",
		"last4":        "4444",
		"exp_month":    12.0,
		"exp_year":     2030.0,
		"status":       "active",
		"created_at":   "2026-11-21T10:01:00Z",
	}
	require.Equal(t, want, card.Body)
	require.Equal(t, want, b.do(t, req{method: "GET", path: "/v1/cards/" + cardID, key: s.sk}).Body)
	ev := b.events(t, s.id, keelpay.EventCardCreated)
	require.Len(t, ev, 1)
	require.Equal(t, want, eventObject(ev[0]), "the event carries the card as the API shows it")

	got := b.do(t, req{method: "GET", path: "/v1/card_sessions/" + id, key: s.sk})
	require.Equal(t, "completed", got.str("status"))
	require.Equal(t, cardID, got.str("card"))

	// A session saves one card.
	again := b.capture(t, s, got, sandbox.CardVisa)
	requireError(t, again, http.StatusConflict, "card_session_unexpected_state")
	require.Equal(t, "completed", again.details()["status"])
	require.Len(t, b.events(t, s.id, keelpay.EventCardCreated), 1)
}

func TestCaptureRejectedByTheProvider(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	session := b.session(t, s)
	r := b.capture(t, s, session, sandbox.CardRejected)
	requireError(t, r, http.StatusUnprocessableEntity, "card_rejected")
	got := b.do(t, req{method: "GET", path: "/v1/card_sessions/" + session.str("id"), key: s.sk})
	require.Equal(t, "open", got.str("status"), "the buyer may try another card")
	require.Empty(t, b.events(t, s.id, ""))
	require.Equal(t, http.StatusCreated, b.capture(t, s, session, sandbox.CardVisa).Status)
}

func TestCardSessionExpiresAfterThirtyMinutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	first, second := b.session(t, s), b.session(t, s)
	get := func(r *response) string {
		return b.do(t, req{method: "GET", path: "/v1/card_sessions/" + r.str("id"), key: s.sk}).str("status")
	}

	b.clock.Advance(30*time.Minute - time.Second)
	require.Equal(t, http.StatusCreated, b.capture(t, s, first, sandbox.CardVisa).Status, "a second before expiry")
	b.clock.Advance(time.Second)
	require.Equal(t, "expired", get(second), "shown expired before the expirer ran")
	r := b.capture(t, s, second, sandbox.CardVisa)
	requireError(t, r, http.StatusConflict, "card_session_unexpected_state")
	require.Equal(t, "expired", r.details()["status"])

	require.NoError(t, b.worker(t).Expire(context.Background()))
	stored, err := b.db.CardSessionGet(context.Background(), s.id, second.str("id"))
	require.NoError(t, err)
	require.Equal(t, keelpay.CardSessionExpired, stored.Status)
	require.Equal(t, "completed", get(first))
}

// Ten captures of one session at once save one card.
func TestConcurrentCapturesSaveOneCard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	session := b.session(t, s)
	body := cardFields(sandbox.CardVisa)
	body["client_secret"] = session.str("client_secret")
	const n = 10
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			statuses[i], _ = send(b.srv.Client(), jsonRequest(b.srv.URL+"/v1/card_sessions/"+session.str("id")+"/cards", s.pk, body))
		})
	}
	wg.Wait()
	count := map[int]int{}
	for _, st := range statuses {
		count[st]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusConflict: n - 1}, count)
	require.Len(t, b.events(t, s.id, keelpay.EventCardCreated), 1)
}
