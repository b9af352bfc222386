package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keelpay/keelpay/internal/browsertest"
	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/internal/tracing/traced"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// fieldCommand sends the card field, opened as the top page (its own
// parent, at the origin it was served for), a command as keelpay.js does,
// and returns the result message.
func fieldCommand(t *testing.T, ctx context.Context, command string) map[string]any {
	t.Helper()
	res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`new Promise(resolve => {
		const id = Math.floor(Math.random() * 1e9);
		window.addEventListener('message', e => {
			if (e.data && e.data.type === 'keelpay:result' && e.data.id === id) resolve(e.data);
		});
		window.postMessage(Object.assign({id}, `+command+`), location.origin);
	})`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	return res
}

// typeCardIntoElement types a card into the sandbox element's inputs, which
// the card field mounted.
func typeCardIntoElement(t *testing.T, ctx context.Context, number string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.ID("number")),
		chromedp.SendKeys(chromedp.ID("name"), "Jane Roe"),
		chromedp.SendKeys(chromedp.ID("number"), number),
		chromedp.SendKeys(chromedp.ID("expiry"), "1230"),
		chromedp.SendKeys(chromedp.ID("cvc"), "123"),
	))
}

// TestBrowserElementKeepsTheCardNumberOut: a buyer saves a card and pays
// with a new card through the hosted card field, on the sandbox's element.
// The cards go to the sandbox's own route; keelpay's API gets only the
// references: no request body it received, no log line, no byte of its
// database file and no trace span attribute holds a card number.
func TestBrowserElementKeepsTheCardNumberOut(t *testing.T) {
	t.Parallel()
	rec := &browsertest.Bodies{}
	// Traced as service.New traces: the server's spans, and the provider
	// wrapped in spans (which must keep its browser element).
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	b := setup(t, func(o *options) {
		o.wrapHandler = rec.Wrap
		o.tracerProvider = tp
		o.wrap = func(p provider.Provider) provider.Provider { return traced.Provider(p, tracing.Tracer(tp)) }
	})
	ctx := browsertest.New(t, 90*time.Second)
	s := b.shop(t, "app_shop")
	origin := b.srv.URL

	// Save a card through a card session.
	session := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer": customerJSON(), "page_origins": []string{origin},
	}})
	require.Equal(t, http.StatusCreated, session.Status, "%s", session.Raw)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+cardFieldQuery("key", s.pk, "card_session", session.str("id"),
		"client_secret", session.str("client_secret"), "origin", origin, "name", "1"))))
	typeCardIntoElement(t, ctx, sandbox.CardMastercard)
	formatted, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("number")))
	require.NoError(t, err)
	require.Equal(t, "5555 5555 5555 4444", formatted, "the element formats the number")
	res := fieldCommand(t, ctx, `{type: 'keelpay:capture'}`)
	require.Equal(t, true, res["ok"], "%v", res)
	card := res["value"].(map[string]any)
	require.Equal(t, "4444", card["last4"])
	require.Equal(t, "mastercard", card["brand"])
	require.Equal(t, 12.0, card["exp_month"])
	require.Equal(t, 2030.0, card["exp_year"])
	empty, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("number")))
	require.NoError(t, err)
	require.Empty(t, empty, "a saved card is cleared from the element")

	// An error of the element is shown in the buyer's words, and nothing
	// reaches keelpay.
	before := len(rec.List())
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("number"), "4242424242424241")))
	res = fieldCommand(t, ctx, `{type: 'keelpay:capture'}`)
	require.Equal(t, false, res["ok"], "%v", res)
	require.Equal(t, "validation_error", res["error"].(map[string]any)["type"], "%v", res)
	shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("card-error")))
	require.NoError(t, err)
	require.Equal(t, "Your card number is not valid.", shown)
	require.Len(t, rec.List(), before, "an invalid card does not reach keelpay")

	// Pay with a new card through a field of the intent.
	body := intentBody(s, 2500)
	body["page_origins"] = []string{origin}
	intent := b.createIntent(t, s, body)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+cardFieldQuery("key", s.pk, "payment_intent", intent.str("id"),
		"client_secret", intent.str("client_secret"), "origin", origin))))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.ID("number")),
		chromedp.SendKeys(chromedp.ID("number"), sandbox.CardVisa),
		chromedp.SendKeys(chromedp.ID("expiry"), "1230"),
		chromedp.SendKeys(chromedp.ID("cvc"), "123"),
	))
	res = fieldCommand(t, ctx, `{type: 'keelpay:confirm', paymentIntent: {id: '`+intent.str("id")+`', clientSecret: '`+intent.str("client_secret")+`'}}`)
	require.Equal(t, true, res["ok"], "%v", res)
	paid := res["value"].(map[string]any)
	require.Equal(t, "succeeded", paid["status"], "%v", paid)
	require.Equal(t, map[string]any{"brand": "visa", "last4": "4242", "exp_month": 12.0, "exp_year": 2030.0, "saved": false}, paid["payment_method"])

	// What keelpay received: the references, never a number, a CVC or
	// the name the element took.
	bodies := rec.List()
	var posts []string
	for _, body := range bodies {
		if strings.HasPrefix(body, "POST /v1/card_sessions/"+session.str("id")+"/cards ") ||
			strings.HasPrefix(body, "POST /v1/payment_intents/"+intent.str("id")+"/confirm ") {
			posts = append(posts, body)
			require.Regexp(t, `"payment_method":"pm_[A-Za-z0-9]+"`, body)
			require.NotContains(t, body, "Jane Roe")
			require.NotContains(t, body, `"cvc"`)
		}
	}
	require.Len(t, posts, 2, "%v", bodies)
	numbers := []string{sandbox.CardMastercard, sandbox.CardVisa, "5555 5555 5555 4444", "4242 4242 4242 4242", "4242424242424241"}
	for _, n := range numbers {
		for _, body := range bodies {
			require.NotContains(t, body, n, "a request body to keelpay's API holds a card number")
		}
		require.NotContains(t, b.logs.String(), n, "a log line holds a card number")
	}
	// keelpay's database file, and its write-ahead log.
	var files int
	for _, suffix := range []string{"", "-wal", "-shm"} {
		data, err := os.ReadFile(b.path + suffix)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		files++
		for _, n := range numbers {
			require.False(t, bytes.Contains(data, []byte(n)), "keelpay.db%s holds a card number", suffix)
		}
	}
	require.NotZero(t, files)
	// No span attribute either; the element was asked for in a span.
	var names []string
	for _, span := range spans.GetSpans() {
		names = append(names, span.Name)
		for _, kv := range span.Attributes {
			for _, n := range numbers {
				require.NotContains(t, kv.Value.String(), n, "span %s attribute %s holds a card number", span.Name, kv.Key)
			}
		}
	}
	require.Contains(t, names, "provider.BrowserElement")
	require.Contains(t, names, "provider.SaveCard")
}
