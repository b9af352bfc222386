package sandbox_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

type notification struct{ merchantID, attemptID string }

type challengeBundle struct {
	*bundle
	client   *http.Client
	notified chan notification
	// actionURL is the challenge of the charge with attempt id "att_3ds".
	actionURL string
}

// setupChallenge serves the sandbox's 3D Secure page and charges the 3D
// Secure card with attempt id "att_3ds".
func setupChallenge(t *testing.T) *challengeBundle {
	t.Helper()
	b := setup(t)
	srv := httptest.NewServer(b.sb.ChallengeHandler())
	t.Cleanup(srv.Close)
	b.sb.SetBaseURL(srv.URL)
	cb := &challengeBundle{bundle: b, client: srv.Client(), notified: make(chan notification, 10)}
	b.sb.SetNotifier(func(_ context.Context, merchantID, attemptID string) {
		cb.notified <- notification{merchantID, attemptID}
	})

	res, err := b.chargeNew(t, "att_3ds", sandbox.CardThreeDSecure)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeRequiresAction, res.Status)
	require.True(t, strings.HasPrefix(res.ActionURL, srv.URL+"/sandbox/3ds/"), res.ActionURL)
	cb.actionURL = res.ActionURL
	return cb
}

type page struct {
	status int
	header http.Header
	body   string
}

func (cb *challengeBundle) get(t *testing.T, u string) page {
	t.Helper()
	resp, err := cb.client.Get(u)
	require.NoError(t, err)
	return readPage(t, resp)
}

func (cb *challengeBundle) answer(t *testing.T, u, result string) page {
	t.Helper()
	resp, err := cb.client.PostForm(u, url.Values{"result": {result}})
	require.NoError(t, err)
	return readPage(t, resp)
}

func readPage(t *testing.T, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return page{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

func (cb *challengeBundle) lookup(t *testing.T) *provider.ChargeResult {
	t.Helper()
	res, err := cb.sb.LookupCharge(cb.ctx, merchant, "att_3ds")
	require.NoError(t, err)
	return res
}

// waitNotified waits for the notifier to be called for att_3ds.
func (cb *challengeBundle) waitNotified(t *testing.T) {
	t.Helper()
	select {
	case n := <-cb.notified:
		require.Equal(t, notification{merchant, "att_3ds"}, n)
	case <-time.After(10 * time.Second): // a guard against hanging, not a wait
		t.Fatal("the notifier was not called")
	}
}

func (cb *challengeBundle) requireNotNotified(t *testing.T) {
	t.Helper()
	select {
	case n := <-cb.notified:
		t.Fatalf("unexpected notification %+v", n)
	default:
	}
}

var nonceRE = regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9]+)'`)

// requireSafePage checks the headers of every page and returns the nonce.
func requireSafePage(t *testing.T, p page) string {
	t.Helper()
	require.Equal(t, "text/html; charset=utf-8", p.header.Get("Content-Type"))
	require.Equal(t, "no-store", p.header.Get("Cache-Control"))
	require.Equal(t, "nosniff", p.header.Get("X-Content-Type-Options"))
	csp := p.header.Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.Contains(t, csp, "form-action 'self'")
	require.NotContains(t, csp, "unsafe")
	m := nonceRE.FindStringSubmatch(csp)
	require.NotNil(t, m, csp)
	require.Contains(t, csp, "style-src 'nonce-"+m[1]+"'")
	require.NotContains(t, p.body, "http://", "no external resources")
	require.NotContains(t, p.body, "https://", "no external resources")
	return m[1]
}

// requirePostsStatus checks that the page posts status to its parent with a
// script allowed by the page's nonce.
func requirePostsStatus(t *testing.T, p page, status string) {
	t.Helper()
	nonce := requireSafePage(t, p)
	require.Contains(t, p.body, `<script nonce="`+nonce+`">`)
	require.Contains(t, p.body, `window.parent.postMessage({type: "keelpay:3ds", status: "`+status+`"}, "*")`)
}

func TestChallengeComplete(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	require.Equal(t, cb.actionURL, cb.lookup(t).ActionURL)

	p := cb.get(t, cb.actionURL)
	require.Equal(t, http.StatusOK, p.status)
	requireSafePage(t, p)
	require.Contains(t, p.body, "12.34 EUR")
	require.Contains(t, p.body, merchant)
	require.Contains(t, p.body, `<form method="post">`)
	require.Contains(t, p.body, `name="result" value="complete">Complete</button>`)
	require.Contains(t, p.body, `name="result" value="fail">Fail</button>`)
	require.NotContains(t, p.body, "<script", "an open challenge posts nothing")

	p = cb.answer(t, cb.actionURL, "complete")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Authentication completed")
	require.NotContains(t, p.body, "<form")
	requirePostsStatus(t, p, "succeeded")
	cb.waitNotified(t)

	res := cb.lookup(t)
	require.Equal(t, provider.ChargeSucceeded, res.Status)
	require.Len(t, res.AuthorizationCode, 6)
	require.NotEmpty(t, res.OrderID)
	require.Empty(t, res.ActionURL)
	require.Equal(t, 1, cb.sb.Charges())

	// The second answer is refused and changes nothing.
	p = cb.answer(t, cb.actionURL, "fail")
	require.Equal(t, http.StatusConflict, p.status)
	require.Contains(t, p.body, "already answered")
	requirePostsStatus(t, p, "succeeded")
	require.Equal(t, provider.ChargeSucceeded, cb.lookup(t).Status)
	cb.requireNotNotified(t)

	// The page keeps showing the outcome; the charge stays idempotent.
	p = cb.get(t, cb.actionURL)
	require.Equal(t, http.StatusOK, p.status)
	requirePostsStatus(t, p, "succeeded")
	again, err := cb.chargeNew(t, "att_3ds", sandbox.CardThreeDSecure)
	require.NoError(t, err)
	require.Equal(t, res, again)
	require.Equal(t, 1, cb.sb.Charges())
}

func TestChallengeFail(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	p := cb.answer(t, cb.actionURL, "fail")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Authentication failed")
	requirePostsStatus(t, p, "failed")
	cb.waitNotified(t)

	res := cb.lookup(t)
	require.Equal(t, provider.ChargeFailed, res.Status)
	require.Equal(t, provider.FailureAuthenticationFailed, res.Failure.Code)
	require.Zero(t, cb.sb.Charges())

	p = cb.answer(t, cb.actionURL, "complete")
	require.Equal(t, http.StatusConflict, p.status)
	require.Equal(t, provider.ChargeFailed, cb.lookup(t).Status)
}

func TestChallengeExpires(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	cb.clock.Advance(sandbox.ChallengeTimeout - time.Second)
	require.Equal(t, provider.ChargeRequiresAction, cb.lookup(t).Status)
	require.Contains(t, cb.get(t, cb.actionURL).body, `value="complete"`)

	cb.clock.Advance(time.Second)
	res := cb.lookup(t)
	require.Equal(t, provider.ChargeFailed, res.Status)
	require.Equal(t, provider.FailureAuthenticationExpired, res.Failure.Code)

	p := cb.get(t, cb.actionURL)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Authentication expired")
	require.NotContains(t, p.body, "<form")
	requirePostsStatus(t, p, "expired")

	p = cb.answer(t, cb.actionURL, "complete")
	require.Equal(t, http.StatusConflict, p.status)
	require.Contains(t, p.body, "expired")
	requirePostsStatus(t, p, "expired")
	require.Equal(t, provider.ChargeFailed, cb.lookup(t).Status)
	require.Zero(t, cb.sb.Charges())
	cb.requireNotNotified(t)
}

func TestChallengeExpiresWithoutLookup(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	cb.clock.Advance(sandbox.ChallengeTimeout)
	// The answer is the first to look at the challenge after it expired.
	p := cb.answer(t, cb.actionURL, "complete")
	require.Equal(t, http.StatusConflict, p.status)
	require.Equal(t, provider.FailureAuthenticationExpired, cb.lookup(t).Failure.Code)
}

func TestChallengeBadRequests(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	base := strings.TrimSuffix(cb.actionURL, cb.actionURL[strings.LastIndexByte(cb.actionURL, '/')+1:])

	p := cb.get(t, base+"3ds_nope")
	require.Equal(t, http.StatusNotFound, p.status)
	requireSafePage(t, p)
	require.Equal(t, http.StatusNotFound, cb.answer(t, base+"3ds_nope", "complete").status)

	p = cb.answer(t, cb.actionURL, "maybe")
	require.Equal(t, http.StatusBadRequest, p.status)
	requireSafePage(t, p)

	resp, err := cb.client.Post(cb.actionURL, "application/x-www-form-urlencoded", strings.NewReader("result=complete&pad="+strings.Repeat("x", 2000)))
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, readPage(t, resp).status)

	req, err := http.NewRequest(http.MethodDelete, cb.actionURL, nil)
	require.NoError(t, err)
	resp, err = cb.client.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusMethodNotAllowed, readPage(t, resp).status)

	// None of these answered the challenge.
	require.Equal(t, provider.ChargeRequiresAction, cb.lookup(t).Status)
	cb.requireNotNotified(t)
}

func TestAnswerChallenge(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	require.NoError(t, cb.sb.AnswerChallenge(cb.ctx, cb.actionURL, true))
	cb.waitNotified(t)
	require.Equal(t, provider.ChargeSucceeded, cb.lookup(t).Status)
	require.ErrorIs(t, cb.sb.AnswerChallenge(cb.ctx, cb.actionURL, false), sandbox.ErrChallengeClosed)
	require.ErrorIs(t, cb.sb.AnswerChallenge(cb.ctx, "3ds_nope", true), sandbox.ErrChallengeNotFound)

	res, err := cb.chargeNew(t, "att_3ds_2", sandbox.CardThreeDSecure)
	require.NoError(t, err)
	id := res.ActionURL[strings.LastIndexByte(res.ActionURL, '/')+1:]
	require.NoError(t, cb.sb.AnswerChallenge(cb.ctx, id, false))
	got, err := cb.sb.LookupCharge(cb.ctx, merchant, "att_3ds_2")
	require.NoError(t, err)
	require.Equal(t, provider.FailureAuthenticationFailed, got.Failure.Code)

	res, err = cb.chargeNew(t, "att_3ds_3", sandbox.CardThreeDSecure)
	require.NoError(t, err)
	cb.clock.Advance(sandbox.ChallengeTimeout)
	require.ErrorIs(t, cb.sb.AnswerChallenge(cb.ctx, res.ActionURL, true), sandbox.ErrChallengeExpired)
}

func TestVoidClosesChallenge(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	require.NoError(t, cb.sb.Void(cb.ctx, merchant, "att_3ds"))
	res := cb.lookup(t)
	require.Equal(t, provider.ChargeFailed, res.Status)
	require.Equal(t, provider.FailureAuthenticationFailed, res.Failure.Code)
	require.True(t, res.Voided)

	p := cb.answer(t, cb.actionURL, "complete")
	require.Equal(t, http.StatusConflict, p.status)
	require.Zero(t, cb.sb.Charges())
	require.Zero(t, cb.sb.Voids())
}

func TestSetBaseURLMovesOpenChallenges(t *testing.T) {
	t.Parallel()
	cb := setupChallenge(t)
	cb.sb.SetBaseURL("https://example.test/")
	require.True(t, strings.HasPrefix(cb.lookup(t).ActionURL, "https://example.test/sandbox/3ds/3ds_"))
}
