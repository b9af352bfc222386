package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// shop is a sandbox store set up through the API, with its keys.
type shop struct {
	id, sk, pk, currency string
}

func (b *bundle) shop(t *testing.T, clientID string) shop {
	t.Helper()
	r := b.setupStore(t, clientID)
	return shop{id: r.str("id"), sk: r.str("secret_key"), pk: r.str("publishable_key"), currency: r.str("currency")}
}

// The customer of the tests. Every personal value is distinctive, so that
// a test can look for it in events and logs.
const (
	custID    = "cus_42"
	custName  = "Zelda Personalname"
	custEmail = "zelda.personal@mail.example"
	custPhone = "+4915198765432"
	holder    = "Zelda Cardholdername"
	postal    = "PC 7733"
	state     = "Statename Personal"
)

func customerJSON() map[string]any {
	return map[string]any{"id": custID, "name": custName, "email": custEmail, "phone": custPhone}
}

// intentBody is a valid intent of amount minor units in the store's
// currency.
func intentBody(s shop, amount int) map[string]any {
	return map[string]any{"amount": amount, "currency": s.currency, "customer": customerJSON()}
}

// createIntent creates an intent and returns its response (201).
func (b *bundle) createIntent(t *testing.T, s shop, body map[string]any) *response {
	t.Helper()
	r := b.do(t, req{method: "POST", path: "/v1/payment_intents", key: s.sk, body: body})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r
}

// cardFields are a new card's fields as the browser sends them.
func cardFields(number string) map[string]any {
	return map[string]any{"number": number, "exp_month": 12, "exp_year": 2030, "cvc": "123", "name": holder}
}

// session opens a card session for custID.
func (b *bundle) session(t *testing.T, s shop) *response {
	t.Helper()
	r := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer": customerJSON(), "page_origins": []string{"https://shop.example"},
	}})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r
}

// capture captures a card into a session as the browser does.
func (b *bundle) capture(t *testing.T, s shop, session *response, number string) *response {
	t.Helper()
	body := cardFields(number)
	body["client_secret"] = session.str("client_secret")
	return b.do(t, req{method: "POST", path: "/v1/card_sessions/" + session.str("id") + "/cards", key: s.pk, body: body})
}

// saveCard saves a card for custID and returns its id.
func (b *bundle) saveCard(t *testing.T, s shop, number string) string {
	t.Helper()
	r := b.capture(t, s, b.session(t, s), number)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	return r.str("id")
}

// confirmNew confirms an intent from the hosted card field with a new
// card; extra fields (billing) are added to the body.
func (b *bundle) confirmNew(t *testing.T, s shop, intent *response, number string, extra map[string]any) *response {
	t.Helper()
	body := cardFields(number)
	body["client_secret"] = intent.str("client_secret")
	for k, v := range extra {
		body[k] = v
	}
	return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + intent.str("id") + "/confirm", key: s.pk, body: body})
}

// confirmSaved confirms an intent with a saved card and the secret key.
func (b *bundle) confirmSaved(t *testing.T, s shop, intentID, cardID string) *response {
	t.Helper()
	return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + intentID + "/confirm", key: s.sk,
		body: map[string]any{"payment_method": cardID}})
}

func (b *bundle) getIntent(t *testing.T, s shop, id string) *response {
	t.Helper()
	r := b.do(t, req{method: "GET", path: "/v1/payment_intents/" + id, key: s.sk})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	return r
}

// record reads an intent straight from storage.
func (b *bundle) record(t *testing.T, s shop, id string) *keelpay.PaymentIntent {
	t.Helper()
	pi, err := b.db.PaymentIntentGet(context.Background(), s.id, id)
	require.NoError(t, err)
	return pi
}

// events returns the store's events of a type (all types when empty),
// oldest first, as stored: each with its decoded body.
func (b *bundle) events(t *testing.T, storeID string, typ keelpay.EventType) []map[string]any {
	t.Helper()
	p := storageListAll(storeID)
	p.Type = typ
	list, _, err := b.db.EventList(context.Background(), p)
	require.NoError(t, err)
	var out []map[string]any
	for i := len(list) - 1; i >= 0; i-- {
		var body map[string]any
		require.NoError(t, json.Unmarshal(list[i].Body, &body))
		out = append(out, body)
	}
	return out
}

// eventObject returns data.object of an event body.
func eventObject(e map[string]any) map[string]any {
	return e["data"].(map[string]any)["object"].(map[string]any)
}

// worker is another process on the same database running the background
// work, as a second refserver would. It does not take the sandbox's
// notifications from the process that serves the API.
func (b *bundle) worker(t *testing.T) *payments.Service {
	t.Helper()
	return mustNew(payments.New(payments.Config{
		Clock: b.clock, Logger: discardLogger(), Provider: hideNotifier{b.sandbox}, Storage: b.db,
	}))

}

// hideNotifier is a provider without the Notifier interface.
type hideNotifier struct{ provider.Provider }

// lastError returns last_error of an intent response, or nil.
func lastError(r *response) map[string]any {
	le, _ := r.Body["last_error"].(map[string]any)
	return le
}

// notified wraps the sandbox so that a test can wait until the service
// has handled a notification (without sleeping): the service registers its
// notifier through the wrapper, which reports each attempt id once the
// service's handler returned.
type notified struct {
	provider.Provider
	done chan string
}

func withNotified(n *notified) func(*options) {
	return func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider {
			n.Provider, n.done = p, make(chan string, 16)
			return n
		}
	}
}

func (n *notified) SetNotifier(f provider.NotifyFunc) {
	n.Provider.(provider.Notifier).SetNotifier(func(ctx context.Context, merchantID, attemptID string) {
		f(ctx, merchantID, attemptID)
		n.done <- attemptID
	})
}

// wait waits for the notification of attemptID to be handled.
func (n *notified) wait(t *testing.T, attemptID string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-n.done:
			if got == attemptID {
				return
			}
		case <-timeout:
			t.Fatalf("no notification of %s was handled", attemptID)
		}
	}
}

// requireStatus asserts an intent response's HTTP status and intent
// status.
func requireStatus(t *testing.T, r *response, httpStatus int, status keelpay.PaymentIntentStatus) {
	t.Helper()
	require.Equal(t, httpStatus, r.Status, "%s", r.Raw)
	require.Equal(t, string(status), r.str("status"), "%s", r.Raw)
}

// requireOneEvent asserts that the store has exactly one event of typ
// about the intent, and returns its object.
func (b *bundle) requireOneEvent(t *testing.T, s shop, typ keelpay.EventType, intentID string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, e := range b.events(t, s.id, typ) {
		if obj := eventObject(e); obj["id"] == intentID {
			found = append(found, obj)
		}
	}
	require.Len(t, found, 1, "events %s of %s", typ, intentID)
	return found[0]
}

// requireNoEvent asserts that the store has no event of typ about the
// intent.
func (b *bundle) requireNoEvent(t *testing.T, s shop, typ keelpay.EventType, intentID string) {
	t.Helper()
	for _, e := range b.events(t, s.id, typ) {
		require.NotEqual(t, intentID, eventObject(e)["id"], "unexpected %s event", typ)
	}
}

func pi(t *testing.T, r *response) string {
	t.Helper()
	id := r.str("id")
	require.True(t, keelpay.ValidID(keelpay.PrefixPaymentIntent, id), "not an intent: %s", r.Raw)
	return id
}

// storageListAll selects up to 100 of a store's events.
func storageListAll(storeID string) storage.EventListParams {
	return storage.EventListParams{StoreID: storeID, Limit: 100}
}
