package service_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
)

// traced starts a kit whose service sends its spans to an in-memory
// exporter, each span exported as it ends.
func traced(t *testing.T) (*keelpaytest.Kit, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	// Registered first, so it runs after the kit has stopped the service.
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	k := keelpaytest.Start(t, keelpaytest.WithServiceConfig(func(c *service.Config) { c.TracerProvider = tp }))
	return k, exp
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrString(s tracetest.SpanStub, key string) string {
	v, _ := attr(s, key)
	return v.String()
}

// waitSpan waits until a span that match accepts has ended and returns it
// with every span ended by then.
func waitSpan(t *testing.T, exp *tracetest.InMemoryExporter, what string, match func(tracetest.SpanStub) bool) (tracetest.SpanStub, tracetest.SpanStubs) {
	t.Helper()
	var found tracetest.SpanStub
	var all tracetest.SpanStubs
	require.Eventually(t, func() bool {
		all = exp.GetSpans()
		for _, s := range all {
			if match(s) {
				found = s
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "no span %s", what)
	return found, all
}

// under reports whether s descends from ancestor in spans.
func under(spans tracetest.SpanStubs, s, ancestor tracetest.SpanStub) bool {
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, x := range spans {
		byID[x.SpanContext.SpanID()] = x
	}
	for p := s.Parent; p.IsValid(); {
		if p.SpanID() == ancestor.SpanContext.SpanID() {
			return true
		}
		x, ok := byID[p.SpanID()]
		if !ok {
			return false
		}
		p = x.Parent
	}
	return false
}

func named(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTracingSpansOfAPayment follows a payment through a real HTTP server
// and SQLite: the request spans, the storage and provider spans under
// them, and the webhook attempt in a trace of its own.
func TestTracingSpansOfAPayment(t *testing.T) {
	k, exp := traced(t)
	st := k.Store(t)
	card := st.SaveCard(t, sandbox.CardVisa)
	pi := st.Pay(t, card, 1999, "eur")
	require.Equal(t, keelpay.IntentSucceeded, pi.Status)
	ev, err := k.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID).Event()
	require.NoError(t, err)

	attempt, spans := waitSpan(t, exp, "webhook.attempt of "+ev.ID, func(s tracetest.SpanStub) bool {
		return s.Name == "webhook.attempt" && attrString(s, "keelpay.event_id") == ev.ID
	})

	// The request spans, named by their routes.
	const confirmRoute = "/v1/payment_intents/{id}/confirm"
	confirms := named(spans, "POST "+confirmRoute)
	require.Len(t, confirms, 1)
	confirm := confirms[0]
	require.Equal(t, trace.SpanKindServer, confirm.SpanKind)
	require.Equal(t, confirmRoute, attrString(confirm, "http.route"))
	require.Equal(t, "POST", attrString(confirm, "http.request.method"))
	require.Equal(t, "200", attrString(confirm, "http.response.status_code"))
	require.Equal(t, st.ID, attrString(confirm, "keelpay.store_id"))
	require.True(t, strings.HasPrefix(attrString(confirm, "keelpay.request_id"), keelpay.PrefixRequest), "request id %q", attrString(confirm, "keelpay.request_id"))
	creates := named(spans, "POST /v1/payment_intents")
	require.Len(t, creates, 1)
	require.Equal(t, st.ID, attrString(creates[0], "keelpay.store_id"))
	require.Equal(t, "201", attrString(creates[0], "http.response.status_code"))
	require.NotEqual(t, attrString(creates[0], "keelpay.request_id"), attrString(confirm, "keelpay.request_id"))

	// Storage under the confirm's request: its commits (a batch of
	// writes each, one span per batch with its number of writes: the
	// attempt, and the outcome with its event), and no read of its own:
	// a first confirm with the intent's card reads the intent and the
	// card in its attempt's write.
	var commits, writes, reads int
	for _, s := range spans {
		if !under(spans, s, confirm) {
			continue
		}
		switch {
		case s.Name == "storage.Commit":
			commits++
			for _, a := range s.Attributes {
				if a.Key == "keelpay.storage.writes" {
					writes += int(a.Value.AsInt64())
				}
			}
		case strings.HasPrefix(s.Name, "storage."):
			reads++
		}
	}
	require.GreaterOrEqual(t, commits, 2, "the confirm's attempt and outcome are not commits under its span")
	require.Greater(t, writes, commits, "no commit of the confirm carries several writes (the outcome and its event)")
	require.Zero(t, reads, "storage reads under the confirm besides its commits")

	// The provider's charge under the confirm's request.
	charges := named(spans, "provider.Charge")
	require.Len(t, charges, 1)
	charge := charges[0]
	require.True(t, under(spans, charge, confirm), "provider.Charge is not under the confirm's request span")
	require.Equal(t, trace.SpanKindClient, charge.SpanKind)
	require.Equal(t, "succeeded", attrString(charge, "keelpay.outcome"))
	require.NotEmpty(t, attrString(charge, "keelpay.attempt_id"))

	// The webhook attempt: a trace of its own (it runs after the request's
	// commit, perhaps in another process, perhaps hours later), with the
	// event's and store's ids to find the request by.
	require.False(t, attempt.Parent.IsValid(), "the attempt has a parent span")
	require.NotEqual(t, confirm.SpanContext.TraceID(), attempt.SpanContext.TraceID())
	require.Equal(t, trace.SpanKindClient, attempt.SpanKind)
	require.Equal(t, st.ID, attrString(attempt, "keelpay.store_id"))
	require.Equal(t, string(keelpay.EventPaymentIntentSucceeded), attrString(attempt, "keelpay.event_type"))
	require.Equal(t, "1", attrString(attempt, "keelpay.webhook.attempt"))
	require.Equal(t, "succeeded", attrString(attempt, "keelpay.outcome"))
	require.True(t, strings.HasPrefix(attrString(attempt, "http.response.status_code"), "2"), "status %s", attrString(attempt, "http.response.status_code"))
}

// call sends a JSON request to the kit's server and decodes the answer.
func call(t *testing.T, k *keelpaytest.Kit, method, path, key string, body any, want int) map[string]any {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, k.URL+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, path, out)
	var m map[string]any
	require.NoError(t, json.Unmarshal(out, &m))
	return m
}

// TestTracingCarriesNoSecrets makes a payment and a refund with a card,
// personal data and every kind of secret in the requests, and looks for
// each of them in every span's name, attributes, events, links and
// status.
func TestTracingCarriesNoSecrets(t *testing.T) {
	k, exp := traced(t)
	st := k.Store(t)
	customer := keelpay.Customer{ID: "cus_trace", Name: "Quintessa Tracewell", Email: "quintessa.tracewell@example.org", Phone: "+4915177766655"}
	const cvc = "739"
	session := call(t, k, http.MethodPost, "/v1/card_sessions", st.SecretKey,
		map[string]any{"customer": customer, "page_origins": []string{"https://shop.example"}}, http.StatusCreated)
	sessionSecret := session["client_secret"].(string)
	card := call(t, k, http.MethodPost, "/v1/card_sessions/"+session["id"].(string)+"/cards", st.PublishableKey, map[string]any{
		"client_secret": sessionSecret, "number": sandbox.CardVisa,
		"exp_month": 12, "exp_year": k.Clock.Now().Year() + 2, "cvc": cvc,
	}, http.StatusCreated)
	created := call(t, k, http.MethodPost, "/v1/payment_intents", st.SecretKey, map[string]any{
		"amount": 1999, "currency": "eur", "customer": customer, "payment_method": card["id"],
	}, http.StatusCreated)
	intentSecret := created["client_secret"].(string)
	intentID := created["id"].(string)
	call(t, k, http.MethodPost, "/v1/payment_intents/"+intentID+"/confirm", st.SecretKey, map[string]any{}, http.StatusOK)
	// The browser's confirm of another intent: publishable key, the
	// intent's client_secret and a new card.
	browser := call(t, k, http.MethodPost, "/v1/payment_intents", st.SecretKey, map[string]any{
		"amount": 2500, "currency": "eur", "customer": customer,
	}, http.StatusCreated)
	browserSecret := browser["client_secret"].(string)
	call(t, k, http.MethodPost, "/v1/payment_intents/"+browser["id"].(string)+"/confirm", st.PublishableKey, map[string]any{
		"client_secret": browserSecret, "number": sandbox.CardMastercard,
		"exp_month": 12, "exp_year": k.Clock.Now().Year() + 2, "cvc": cvc,
	}, http.StatusOK)
	st.Refund(t, intentID, "requested_by_customer")
	ev, err := k.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, intentID).Event()
	require.NoError(t, err)
	_, spans := waitSpan(t, exp, "webhook.attempt of "+ev.ID, func(s tracetest.SpanStub) bool {
		return s.Name == "webhook.attempt" && attrString(s, "keelpay.event_id") == ev.ID
	})
	require.NotEmpty(t, named(spans, "provider.Charge"))
	require.NotEmpty(t, named(spans, "provider.Refund"))
	require.NotEmpty(t, named(spans, "provider.SaveCard"))
	require.NotEmpty(t, named(spans, "provider.CheckApplication"))

	secrets := map[string]string{
		"secret key":                   st.SecretKey,
		"publishable key":              st.PublishableKey,
		"webhook secret":               st.WebhookSecret,
		"card session client_secret":   sessionSecret,
		"intent client_secret":         intentSecret,
		"card number":                  sandbox.CardVisa,
		"browser's card number":        sandbox.CardMastercard,
		"browser intent client_secret": browserSecret,
		"customer name":                customer.Name,
		"customer email":               customer.Email,
		"customer phone":               customer.Phone,
		"application client secret":    "secret_kit1",
		"Authorization header":         "Bearer ",
	}
	check := func(span tracetest.SpanStub, where, text string) {
		t.Helper()
		for what, secret := range secrets {
			require.NotContains(t, text, secret, "span %q: %s holds the %s", span.Name, where, what)
		}
	}
	checkAttrs := func(span tracetest.SpanStub, where string, attrs []attribute.KeyValue) {
		t.Helper()
		for _, kv := range attrs {
			key := strings.ToLower(string(kv.Key))
			for _, word := range []string{"cvc", "secret", "authorization", "email", "phone", "number", "url", "body", "signature"} {
				require.NotContains(t, key, word, "span %q: %s has the attribute %s", span.Name, where, kv.Key)
			}
			require.NotEqual(t, cvc, kv.Value.String(), "span %q: %s: %s is the CVC", span.Name, where, kv.Key)
			check(span, where+" "+string(kv.Key), kv.Value.String())
		}
	}
	for _, s := range spans {
		check(s, "name", s.Name)
		check(s, "status", s.Status.Description)
		checkAttrs(s, "attributes", s.Attributes)
		for _, e := range s.Events {
			check(s, "event", e.Name)
			checkAttrs(s, "event "+e.Name, e.Attributes)
		}
		for _, l := range s.Links {
			checkAttrs(s, "link", l.Attributes)
		}
	}
}

// TestTracerProviderNilPointer: a typed nil is named, not left to panic
// in the first request.
func TestTracerProviderNilPointer(t *testing.T) {
	var tp *sdktrace.TracerProvider
	_, err := service.New(service.Config{Provider: sandbox.New(sandbox.Config{}), Storage: openDB(t), TracerProvider: tp})
	require.ErrorContains(t, err, "Config.TracerProvider is a nil *trace.TracerProvider")
}
