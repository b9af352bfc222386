package httpprovider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/httpprovider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

const merchant = "merch_shop1"

type bundle struct {
	ctx    context.Context
	clock  *keelpaytest.Clock
	sb     *sandbox.Sandbox
	srv    *httptest.Server
	client *httpprovider.Client
}

// setup serves a sandbox's API (wrapped by wrap, when given) and returns a
// client of it.
func setup(t *testing.T, wrap func(http.Handler) http.Handler) *bundle {
	t.Helper()
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})
	var h http.Handler = sb.APIHandler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	sb.SetBaseURL(srv.URL)
	return &bundle{ctx: t.Context(), clock: clock, sb: sb, srv: srv, client: newClient(t, srv.URL, 0)}
}

func newClient(t *testing.T, baseURL string, timeout time.Duration) *httpprovider.Client {
	t.Helper()
	c, err := httpprovider.New(httpprovider.Config{BaseURL: baseURL, Timeout: timeout})
	require.NoError(t, err)
	return c
}

func newCard(number string) *provider.SaveCardRequest {
	return &provider.SaveCardRequest{MerchantID: merchant, Number: number, ExpMonth: 12, ExpYear: 2030, CVC: "123", Name: "Jane Roe"}
}

func charge(attemptID, number string) provider.ChargeRequest {
	return provider.ChargeRequest{MerchantID: merchant, AttemptID: attemptID, NewCard: newCard(number), Amount: 1234, Currency: "EUR"}
}

// charged charges number with attemptID in the sandbox itself, and requires
// it to succeed.
func (b *bundle) charged(t *testing.T, attemptID, number string) *provider.ChargeResult {
	t.Helper()
	res, err := b.sb.Charge(b.ctx, charge(attemptID, number))
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status)
	return res
}

func refund(attemptID string, c *provider.ChargeResult) provider.RefundRequest {
	return provider.RefundRequest{MerchantID: merchant, AttemptID: attemptID, ChargeAttemptID: "att_c",
		OrderID: c.OrderID, Amount: c.Amount, Currency: c.Currency}
}

func requireKind(t *testing.T, want provider.ErrorKind, err error) {
	t.Helper()
	var e *provider.Error
	require.True(t, errors.As(err, &e), "want a *provider.Error of kind %s, got %v", want, err)
	require.Equal(t, want, e.Kind, "error: %v", err)
}

// TestEveryMethodAndErrorRoundTrips makes each call through the client and
// then the same call on the sandbox itself: the answers must be the same.
// Calls with an attempt id are idempotent, so the second call returns the
// outcome the first one stored.
func TestEveryMethodAndErrorRoundTrips(t *testing.T) {
	t.Parallel()
	type call func(context.Context, provider.Provider) (any, error)
	creds := func(id, secret string) call {
		return func(ctx context.Context, p provider.Provider) (any, error) {
			return p.CheckApplication(ctx, provider.Credentials{ClientID: id, ClientSecret: secret})
		}
	}
	chargeCall := func(r provider.ChargeRequest) call {
		return func(ctx context.Context, p provider.Provider) (any, error) { return p.Charge(ctx, r) }
	}
	lookupCharge := func(attemptID string) call {
		return func(ctx context.Context, p provider.Provider) (any, error) {
			return p.LookupCharge(ctx, merchant, attemptID)
		}
	}
	lookupRefund := func(attemptID string) call {
		return func(ctx context.Context, p provider.Provider) (any, error) {
			return p.LookupRefund(ctx, merchant, attemptID)
		}
	}
	saveCard := func(number string) call {
		return func(ctx context.Context, p provider.Provider) (any, error) { return p.SaveCard(ctx, *newCard(number)) }
	}
	void := func(attemptID string) call {
		return func(ctx context.Context, p provider.Provider) (any, error) {
			return nil, p.Void(ctx, merchant, attemptID)
		}
	}
	refundOf := func(attemptID string) func(*bundle, *testing.T) call {
		return func(b *bundle, t *testing.T) call {
			res := b.charged(t, "att_c", sandbox.CardRefundRejected)
			return func(ctx context.Context, p provider.Provider) (any, error) {
				return p.Refund(ctx, refund(attemptID, res))
			}
		}
	}
	billed := charge("att_billing", sandbox.CardBillingRequired)
	billed.Billing = &provider.Billing{Country: "FI", State: "Uusimaa", PostalCode: "00100"}
	noAttempt := charge("", sandbox.CardVisa)

	tests := []struct {
		name string
		// prepare readies the sandbox and may return the call, when it
		// depends on what it prepared.
		prepare func(*bundle, *testing.T) call
		call    call
		// ignore leaves out what two calls cannot share (a new token).
		ignore cmp.Option
		kind   provider.ErrorKind // "" for a result
		err    error
	}{
		{name: "check_application", call: creds("app_shop1_usd", "secret_shop1_usd")},
		{name: "save_card", call: saveCard(sandbox.CardMastercard), ignore: cmpopts.IgnoreFields(provider.SavedCard{}, "Token")},
		{name: "charge a new card", call: chargeCall(charge("att_1", sandbox.CardVisa))},
		{name: "charge a saved card", prepare: func(b *bundle, t *testing.T) call {
			card, err := b.client.SaveCard(b.ctx, *newCard(sandbox.CardVisa))
			require.NoError(t, err)
			return chargeCall(provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_1", CardToken: card.Token, Amount: 1, Currency: "USD"})
		}},
		{name: "charge with billing", call: chargeCall(billed)},
		{name: "charge declined", call: chargeCall(charge("att_1", sandbox.CardInsufficientFunds))},
		{name: "charge needs billing", call: chargeCall(charge("att_1", sandbox.CardBillingRequired))},
		{name: "charge another amount", call: chargeCall(charge("att_1", sandbox.CardAmountMismatch))},
		{name: "charge with 3D Secure", call: chargeCall(charge("att_1", sandbox.CardThreeDSecure))},
		{name: "lookup_charge", prepare: func(b *bundle, t *testing.T) call {
			b.charged(t, "att_c", sandbox.CardNoOrderID)
			return lookupCharge("att_c")
		}},
		{name: "lookup_charge pending", prepare: func(b *bundle, t *testing.T) call {
			_, err := b.sb.Charge(b.ctx, charge("att_c", sandbox.CardOutcomeUnknown))
			requireKind(t, provider.KindOutcomeUnknown, err)
			return lookupCharge("att_c")
		}},
		{name: "void", prepare: func(b *bundle, t *testing.T) call {
			b.charged(t, "att_c", sandbox.CardVisa)
			return void("att_c")
		}},
		{name: "refund", prepare: func(b *bundle, t *testing.T) call {
			res := b.charged(t, "att_c", sandbox.CardVisa)
			return func(ctx context.Context, p provider.Provider) (any, error) {
				return p.Refund(ctx, refund("rfatt_1", res))
			}
		}},
		{name: "refund refused", prepare: refundOf("rfatt_1")},
		{name: "lookup_refund", prepare: func(b *bundle, t *testing.T) call {
			res := b.charged(t, "att_c", sandbox.CardVisa)
			_, err := b.sb.Refund(b.ctx, refund("rfatt_1", res))
			require.NoError(t, err)
			return lookupRefund("rfatt_1")
		}},

		{name: "invalid_credentials", call: creds("app_shop1", "secret_other"), kind: provider.KindInvalidCredentials},
		{name: "app_not_found", call: creds("app_x_not_found", "secret_x_not_found"), kind: provider.KindAppNotFound},
		{name: "missing_roles", call: creds("app_x_missing_roles", "secret_x_missing_roles"), kind: provider.KindMissingRoles},
		{name: "access_pending", call: creds("app_x_access_pending", "secret_x_access_pending"), kind: provider.KindAccessPending},
		{name: "certificate_mismatch", call: creds("app_x_cert_mismatch", "secret_x_cert_mismatch"), kind: provider.KindCertificateMismatch},
		{name: "unavailable", call: creds("app_x_unavailable", "secret_x_unavailable"), kind: provider.KindUnavailable},
		{name: "configured outcome", prepare: func(b *bundle, t *testing.T) call {
			b.sb.SetApplication("partner-7", sandbox.AppBehavior{Outcome: provider.KindAccessPending, RetryAfter: 1500 * time.Millisecond})
			return creds("partner-7", "secret_partner-7")
		}, kind: provider.KindAccessPending},
		{name: "unavailable switch", prepare: func(b *bundle, t *testing.T) call {
			b.sb.SetUnavailable(true)
			return chargeCall(charge("att_1", sandbox.CardVisa))
		}, kind: provider.KindUnavailable},
		{name: "access pending switch", prepare: func(b *bundle, t *testing.T) call {
			b.sb.SetAccessPending(true)
			return saveCard(sandbox.CardVisa)
		}, kind: provider.KindAccessPending},
		{name: "card_rejected", call: saveCard(sandbox.CardRejected), kind: provider.KindCardRejected},
		{name: "invalid_request", call: chargeCall(noAttempt), kind: provider.KindInvalidRequest},
		{name: "charge outcome_unknown", call: chargeCall(charge("att_1", sandbox.CardOutcomeUnknown)), kind: provider.KindOutcomeUnknown},
		{name: "refund outcome_unknown", prepare: func(b *bundle, t *testing.T) call {
			res := b.charged(t, "att_c", sandbox.CardRefundOutcomeUnknown)
			return func(ctx context.Context, p provider.Provider) (any, error) {
				return p.Refund(ctx, refund("rfatt_1", res))
			}
		}, kind: provider.KindOutcomeUnknown},
		{name: "lookup_charge of an unknown attempt", call: lookupCharge("att_never"), err: provider.ErrUnknownAttempt},
		{name: "void of an unknown attempt", call: void("att_never"), err: provider.ErrUnknownAttempt},
		{name: "lookup_refund of an unknown attempt", call: lookupRefund("rfatt_never"), err: provider.ErrUnknownAttempt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			call := tc.call
			if tc.prepare != nil {
				if c := tc.prepare(b, t); c != nil {
					call = c
				}
			}
			got, gotErr := call(b.ctx, b.client)
			want, wantErr := call(b.ctx, b.sb)
			switch {
			case tc.err != nil:
				require.ErrorIs(t, gotErr, tc.err)
			case tc.kind != "":
				requireKind(t, tc.kind, gotErr)
			default:
				require.NoError(t, gotErr)
			}
			require.Equal(t, wantErr, gotErr, "the same error, field by field")
			var opts []cmp.Option
			if tc.ignore != nil {
				opts = append(opts, tc.ignore)
			}
			require.Empty(t, cmp.Diff(want, got, opts...), "result (-sandbox +client)")
		})
	}
}

// delayOnce lets the first request to path through to h, then holds its
// answer back until the client has given up: the call took effect, but
// its caller never heard.
func delayOnce(path string) (func(http.Handler) http.Handler, *atomic.Int32) {
	var seen atomic.Int32
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path || seen.Add(1) > 1 {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			<-r.Context().Done()
		})
	}, &seen
}

func TestTimedOutChargeIsAnUnknownOutcomeThatALookupResolves(t *testing.T) {
	t.Parallel()
	wrap, seen := delayOnce(httpprovider.PathPrefix + "charge")
	b := setup(t, wrap)
	slow := newClient(t, b.srv.URL, 100*time.Millisecond)

	_, err := slow.Charge(b.ctx, charge("att_1", sandbox.CardVisa))
	requireKind(t, provider.KindOutcomeUnknown, err)
	require.True(t, provider.IsOutcomeUnknown(err))
	require.EqualValues(t, 1, seen.Load(), "the charge reached the sandbox")

	res, err := b.client.LookupCharge(b.ctx, merchant, "att_1")
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status)
	// Charging again with the same attempt id returns the first outcome.
	again, err := b.client.Charge(b.ctx, charge("att_1", sandbox.CardVisa))
	require.NoError(t, err)
	require.Equal(t, res, again)
	require.Equal(t, 1, b.sb.ChargeCount("att_1"), "no double charge")
	require.Equal(t, 1, b.sb.Charges())
}

func TestTimedOutRefundAndVoidAreUnknownOutcomes(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"refund", "void"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			wrap, _ := delayOnce(httpprovider.PathPrefix + method)
			b := setup(t, wrap)
			slow := newClient(t, b.srv.URL, 100*time.Millisecond)
			res := b.charged(t, "att_c", sandbox.CardVisa)
			if method == "void" {
				requireKind(t, provider.KindOutcomeUnknown, slow.Void(b.ctx, merchant, "att_c"))
				got, err := b.client.LookupCharge(b.ctx, merchant, "att_c")
				require.NoError(t, err)
				require.True(t, got.Voided)
				require.Equal(t, 1, b.sb.Voids())
				return
			}
			_, err := slow.Refund(b.ctx, refund("rfatt_1", res))
			requireKind(t, provider.KindOutcomeUnknown, err)
			got, err := b.client.LookupRefund(b.ctx, merchant, "rfatt_1")
			require.NoError(t, err)
			require.Equal(t, provider.RefundSucceeded, got.Status)
			require.Equal(t, 1, b.sb.Refunds())
		})
	}
}

// everyMethod calls each method once and returns the errors by method.
func everyMethod(ctx context.Context, p provider.Provider) map[string]error {
	errs := map[string]error{}
	_, errs["check_application"] = p.CheckApplication(ctx, provider.Credentials{ClientID: "app_shop1", ClientSecret: "secret_shop1"})
	_, errs["save_card"] = p.SaveCard(ctx, *newCard(sandbox.CardVisa))
	_, errs["charge"] = p.Charge(ctx, charge("att_1", sandbox.CardVisa))
	_, errs["lookup_charge"] = p.LookupCharge(ctx, merchant, "att_1")
	errs["void"] = p.Void(ctx, merchant, "att_1")
	_, errs["refund"] = p.Refund(ctx, provider.RefundRequest{MerchantID: merchant, AttemptID: "rfatt_1", ChargeAttemptID: "att_1", OrderID: "ord_1", Amount: 1234, Currency: "EUR"})
	_, errs["lookup_refund"] = p.LookupRefund(ctx, merchant, "rfatt_1")
	return errs
}

// failingProvider fails every call with err, or returns neither a result
// nor an error when err is nil.
type failingProvider struct{ err error }

func (f failingProvider) CheckApplication(context.Context, provider.Credentials) (*provider.Application, error) {
	return nil, f.err
}
func (f failingProvider) SaveCard(context.Context, provider.SaveCardRequest) (*provider.SavedCard, error) {
	return nil, f.err
}
func (f failingProvider) Charge(context.Context, provider.ChargeRequest) (*provider.ChargeResult, error) {
	return nil, f.err
}
func (f failingProvider) LookupCharge(context.Context, string, string) (*provider.ChargeResult, error) {
	return nil, f.err
}
func (f failingProvider) Void(context.Context, string, string) error { return f.err }
func (f failingProvider) Refund(context.Context, provider.RefundRequest) (*provider.RefundResult, error) {
	return nil, f.err
}
func (f failingProvider) LookupRefund(context.Context, string, string) (*provider.RefundResult, error) {
	return nil, f.err
}

// TestWithoutAnAnswer: what the client returns when it cannot tell what
// the provider did, method by method.
func TestWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	text := func(status int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", status) })
	}
	tests := []struct {
		name    string
		handler http.Handler // nil: nothing listens
		// notDone: the request was certainly not carried out, so even the
		// calls that move money are unavailable.
		notDone bool
		// voidSucceeds: a Void without an error succeeded.
		voidSucceeds bool
	}{
		{name: "connection refused", notDone: true},
		{name: "not a provider (404)", handler: text(http.StatusNotFound), notDone: true},
		{name: "a proxy's 408", handler: text(http.StatusRequestTimeout), notDone: true},
		{name: "a proxy's 502", handler: text(http.StatusBadGateway)},
		{name: "connection lost", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		})},
		{name: "an answer that is not JSON", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("<html>"))
		})},
		{name: "an error kind this client does not know", handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"kind":"from_the_future"}}`))
		})},
		{name: "the provider failed with another error", handler: httpprovider.NewHandler(failingProvider{errors.New("db down: card 4242424242424242")})},
		{name: "the provider returned nothing", handler: httpprovider.NewHandler(failingProvider{}), voidSucceeds: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := closedURL
			if tc.handler != nil {
				srv := httptest.NewServer(tc.handler)
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			for method, err := range everyMethod(t.Context(), newClient(t, url, 0)) {
				if method == "void" && tc.voidSucceeds {
					require.NoError(t, err)
					continue
				}
				want := provider.KindUnavailable
				if !tc.notDone && (method == "charge" || method == "refund" || method == "void") {
					want = provider.KindOutcomeUnknown
				}
				requireKind(t, want, err)
				require.NotContains(t, err.Error(), "4242", "%s", method)
			}
		})
	}
}

func TestRequestsCarryCardsOnlyInTheBodyAndAttemptsAsIdempotencyKeys(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]*http.Request{}
	b := setup(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[strings.TrimPrefix(r.URL.Path, httpprovider.PathPrefix)] = r.Clone(context.Background())
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	everyMethod(b.ctx, b.client)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 7)
	for method, r := range seen {
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.NotContains(t, r.URL.String(), "4242", method)
		for name, values := range r.Header {
			require.NotContains(t, strings.Join(values, " "), "4242", "%s: header %s", method, name)
		}
		key := r.Header.Get("Idempotency-Key")
		switch method {
		case "check_application", "save_card":
			require.Empty(t, key, method)
		case "refund", "lookup_refund":
			require.Equal(t, "rfatt_1", key, method)
		default:
			require.Equal(t, "att_1", key, method)
		}
	}
}

func TestHandlerRefusesWhatIsNotTheProtocol(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(b.srv.URL+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(data)
	}
	invalid := `{"error":{"kind":"invalid_request","message":"the body is not a valid charge request"}}`
	for _, body := range []string{``, `[]`, `{"merchant_id":"m","amount":"1"}`, `{"merchant_id":"m","surprise":1}`, `{} {}`} {
		status, got := post(httpprovider.PathPrefix+"charge", body)
		require.Equal(t, http.StatusBadRequest, status, body)
		require.JSONEq(t, invalid, got, body)
	}
	status, _ := post(httpprovider.PathPrefix+"charge_twice", `{}`)
	require.Equal(t, http.StatusNotFound, status)
	resp, err := http.Get(b.srv.URL + httpprovider.PathPrefix + "charge")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Zero(t, b.sb.Charges())
}

func TestNewRefusesABadBaseURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://host", "http://", "http://u:p@host", "http://host/?x=1", "http://host/#f", "http://%zz"} {
		_, err := httpprovider.New(httpprovider.Config{BaseURL: u})
		require.Error(t, err, u)
	}
	_, err := httpprovider.New(httpprovider.Config{BaseURL: "https://sandbox.internal:8443/"})
	require.NoError(t, err)
}
