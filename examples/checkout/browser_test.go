package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The checkout in headless Chromium, end to end: the page on localhost, the
// reference server (keelpay.js, the card field, the API, the 3D Secure
// page) on 127.0.0.1, so the card field is a cross-origin iframe as on a
// real store. The tests run one after another: some count requests at
// the shared reference server.

// frame attaches to the cross-site iframe whose address matches, once it
// exists. Chromium runs it in another process, as a target of its own.
func frame(t *testing.T, ctx context.Context, match func(url string) bool) context.Context {
	t.Helper()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	found := make(chan target.ID, 1)
	require.NoError(t, chromedp.ListenBrowser(lctx, func(ev any) {
		var info *target.Info
		switch ev := ev.(type) {
		case *target.EventTargetCreated:
			info = ev.TargetInfo
		case *target.EventTargetInfoChanged:
			info = ev.TargetInfo
		}
		if info != nil && info.Type == "iframe" && match(info.URL) {
			select {
			case found <- info.TargetID:
			default:
			}
		}
	}))
	// Listening first, then looking: a frame that appears in between is
	// not missed.
	infos, err := chromedp.Targets(ctx)
	require.NoError(t, err)
	var id target.ID
	for _, info := range infos {
		if info.Type == "iframe" && match(info.URL) {
			id = info.TargetID
		}
	}
	if id == "" {
		select {
		case id = <-found:
		case <-step(t, ctx).Done():
			t.Fatal("no matching frame appeared")
		}
	}
	fctx, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(id), chromedp.WithDetachOnCancel())
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(fctx))
	return fctx
}

// openCheckout loads the checkout and waits for its card field.
func openCheckout(t *testing.T, ctx context.Context, c *checkout) {
	t.Helper()
	require.NoError(t, chromedp.Do(step(t, ctx),
		chromedp.Navigate(c.url),
		chromedp.WaitReady(chromedp.CSS(`body[data-field="ready"]`)),
	))
}

// cardField attaches to the checkout's card field (the iframe of its
// current card session).
func cardField(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	src, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#card-field iframe').src`))
	require.NoError(t, err)
	session := regexp.MustCompile(`card_session=(cs_[A-Za-z0-9]+)`).FindStringSubmatch(src)
	require.NotNil(t, session, src)
	return frame(t, ctx, func(u string) bool { return strings.Contains(u, "card_session="+session[1]) })
}

// step bounds one step of a test, so that a step that cannot happen fails
// with its own line rather than at the test's time limit.
func step(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// typeInto replaces the value of an input of the field by clicking into it
// and typing, as a buyer does. (A click, not only a focus, gives the frame
// the page's keyboard focus.)
func typeInto(t *testing.T, field context.Context, id, text string) {
	t.Helper()
	require.NoError(t, chromedp.Do(step(t, field),
		chromedp.Click(chromedp.ID(id)),
		chromedp.Evaluate[chromedp.Void](`(() => {
			const i = document.getElementById('`+id+`');
			i.value = '';
			i.dispatchEvent(new Event('input', {bubbles: true}));
		})()`),
		chromedp.SendKeys(chromedp.ID(id), text),
	))
	got, err := chromedp.Run(field, chromedp.Value(chromedp.ID(id)))
	require.NoError(t, err)
	if id != "name" {
		got, text = nonDigits.ReplaceAllString(got, ""), nonDigits.ReplaceAllString(text, "")
	}
	require.Equal(t, text, got, "typed into #%s", id)
}

var nonDigits = regexp.MustCompile(`\D`)

// typeCard types a card into the field as a buyer would.
func typeCard(t *testing.T, field context.Context, number string) {
	t.Helper()
	typeInto(t, field, "name", "Sandbox Buyer")
	typeInto(t, field, "number", number)
	typeInto(t, field, "expiry", "1230")
	typeInto(t, field, "cvc", "123")
}

// outcome is what the checkout shows after an action.
type outcome struct {
	Status  string `json:"status"`
	Intent  string `json:"intent"`
	Text    string `json:"text"`
	Message string `json:"message"`
	Code    string `json:"code"`
}

const readOutcome = `(() => {
	const r = document.getElementById('result'), m = document.getElementById('message');
	return {status: r.dataset.status || '', intent: r.dataset.intent || '', text: r.textContent,
		message: m.textContent, code: m.dataset.code || ''};
})()`

// press marks the outcome as unknown, clicks a button of the checkout and
// returns without waiting.
func press(t *testing.T, ctx context.Context, button string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('result').dataset.status = 'pressed'`),
		chromedp.Click(chromedp.ID(button)),
	))
}

// awaitOutcome waits until the checkout shows the outcome of the action.
func awaitOutcome(t *testing.T, ctx context.Context) outcome {
	t.Helper()
	require.NoError(t, chromedp.Do(step(t, ctx),
		chromedp.WaitReady(chromedp.CSS(`#result:not([data-status="pressed"]):not([data-status="working"])`))))
	out, err := chromedp.Run(ctx, chromedp.Evaluate[outcome](readOutcome))
	require.NoError(t, err)
	return out
}

// act presses a button and returns the outcome.
func act(t *testing.T, ctx context.Context, button string) outcome {
	t.Helper()
	press(t, ctx, button)
	return awaitOutcome(t, ctx)
}

// requestCount is how many requests the reference server has answered on
// a route ("METHOD /pattern"), from its metrics.
func requestCount(t *testing.T, route string) int {
	t.Helper()
	method, pattern, _ := strings.Cut(route, " ")
	resp, err := http.Get(keelpayURL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	n := 0
	re := regexp.MustCompile(`(?m)^keelpay_http_requests_total\{code="\d+",method="` + method + `",route="` + regexp.QuoteMeta(pattern) + `"\} (\d+)$`)
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		v, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		n += v
	}
	return n
}

func TestBrowserSavesACardAndPays(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	openCheckout(t, ctx, c)

	// Save a card through a card session.
	field := cardField(t, ctx)
	typeCard(t, field, "4242424242424242")
	out := act(t, ctx, "save")
	require.Equal(t, "saved", out.Status, "%+v", out)
	cardID := regexp.MustCompile(`card_[A-Za-z0-9]+`).FindString(out.Text)
	require.NotEmpty(t, cardID, out.Text)
	c.waitEvent(t, "card.created", cardID)
	status, card := keelpayCall(t, "GET", "/v1/cards/"+cardID, c.srv.keys.SecretKey, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "4242", card["last4"])
	require.Equal(t, "visa", card["brand"])
	require.Equal(t, map[string]any{"id": "cus_demo"}, card["customer"])
	// The page lists the saved card and has a field of a new card session.
	require.NoError(t, chromedp.Do(step(t, ctx),
		chromedp.WaitReady(chromedp.CSS(`#saved-cards option[value="`+cardID+`"]:checked`)),
		chromedp.WaitReady(chromedp.CSS(`body[data-field="ready"]`)),
	))

	// Pay with a new card.
	field = cardField(t, ctx)
	typeCard(t, field, "4242 4242 4242 4242")
	screenshot(t, ctx, "checkout-before-payment.png")
	out = act(t, ctx, "pay")
	require.Equal(t, "succeeded", out.Status, "%+v", out)
	require.Equal(t, "Paid 25.00 EUR with Visa •••• 4242 ("+out.Intent+").", out.Text)
	require.Empty(t, out.Message)
	c.waitEvent(t, "payment_intent.succeeded", out.Intent)
	// The page shows the webhook the store received.
	require.NoError(t, chromedp.Do(step(t, ctx), chromedp.WaitVisible(chromedp.CSS(
		`#events li[data-type="payment_intent.succeeded"][data-object="`+out.Intent+`"]`))))
	screenshot(t, ctx, "checkout-after-payment.png")
	status, intent := keelpayCall(t, "GET", "/v1/payment_intents/"+out.Intent, c.srv.keys.SecretKey, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "succeeded", intent["status"])
	require.Equal(t, 2500.0, intent["amount"])
	require.Equal(t, false, intent["payment_method"].(map[string]any)["saved"])
	require.Equal(t, []any{c.url}, intent["page_origins"])
	// A succeeded payment empties the field.
	requireFieldEmpty(t, field)

	// Pay with the saved card: the store's page holds no card field of
	// the intent; keelpay.js confirms through a hidden one.
	out = act(t, ctx, "pay-saved")
	require.Equal(t, "succeeded", out.Status, "%+v", out)
	c.waitEvent(t, "payment_intent.succeeded", out.Intent)
	_, intent = keelpayCall(t, "GET", "/v1/payment_intents/"+out.Intent, c.srv.keys.SecretKey, nil)
	require.Equal(t, cardID, intent["card"])
	require.Equal(t, true, intent["payment_method"].(map[string]any)["saved"])
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('iframe').length`))
	require.NoError(t, err)
	require.Equal(t, 1, hidden, "the hidden field is gone after the confirm")

	c.requireNeverSaw(t, "4242424242424242")
}

func TestBrowserThreeDSecure(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	for _, tc := range []struct {
		button, status, code string
	}{
		{"complete", "succeeded", ""},
		{"fail", "requires_payment_method", "authentication_failed"},
	} {
		t.Run(tc.button, func(t *testing.T) {
			openCheckout(t, ctx, c)
			field := cardField(t, ctx)
			typeCard(t, field, "4000000000003220")
			press(t, ctx, "pay")

			// The bank's page, in a modal frame on the store's page.
			if err := chromedp.Do(step(t, ctx), chromedp.WaitVisible(chromedp.CSS(`.keelpay-challenge [role="dialog"] iframe`))); err != nil {
				out, _ := chromedp.Run(ctx, chromedp.Evaluate[outcome](readOutcome))
				t.Fatalf("no 3D Secure window: %v; the checkout shows %+v", err, out)
			}
			challenge := frame(t, ctx, func(u string) bool { return strings.HasPrefix(u, keelpayURL+"/sandbox/3ds/") })
			require.NoError(t, chromedp.Do(step(t, challenge), chromedp.WaitVisible(chromedp.CSS(`button.`+tc.button))))
			if tc.button == "complete" {
				screenshot(t, ctx, "checkout-3ds-challenge.png")
			}
			// The window fits the bank's page: not clipped, not half empty.
			fit, err := chromedp.Run(challenge, chromedp.Evaluate[struct {
				Bottom float64 `json:"bottom"`
				Height float64 `json:"height"`
			}](`({bottom: document.querySelector('main').getBoundingClientRect().bottom, height: window.innerHeight})`))
			require.NoError(t, err)
			require.LessOrEqual(t, fit.Bottom, fit.Height, "the 3D Secure page is clipped")
			require.GreaterOrEqual(t, fit.Bottom, 0.8*fit.Height, "the 3D Secure window is mostly empty: %+v", fit)
			require.NoError(t, chromedp.Do(challenge, chromedp.Click(chromedp.CSS(`button.`+tc.button))))

			out := awaitOutcome(t, ctx)
			require.Equal(t, tc.status, out.Status, "%+v", out)
			require.NoError(t, chromedp.Do(step(t, ctx), chromedp.WaitNotPresent(chromedp.CSS(`.keelpay-challenge`))))
			_, intent := keelpayCall(t, "GET", "/v1/payment_intents/"+out.Intent, c.srv.keys.SecretKey, nil)
			require.Equal(t, tc.status, intent["status"])
			if tc.code == "" {
				c.waitEvent(t, "payment_intent.succeeded", out.Intent)
				// Paid after 3D Secure: the card is gone from the field too.
				requireFieldEmpty(t, field)
				return
			}
			require.Equal(t, tc.code, out.Code)
			require.Equal(t, "The card authentication was not completed. Please try again.", out.Message)
			c.waitEvent(t, "payment_intent.payment_failed", out.Intent)
		})
	}
	c.requireNeverSaw(t, "4000000000003220")
}

// requireFieldEmpty checks that the card field holds no card number and
// no CVC.
func requireFieldEmpty(t *testing.T, field context.Context) {
	t.Helper()
	for _, id := range []string{"number", "cvc"} {
		v, err := chromedp.Run(field, chromedp.Value(chromedp.ID(id)))
		require.NoError(t, err)
		require.Empty(t, v, "#%s is not cleared", id)
	}
}

func TestBrowserSavingTheSameCardTwiceListsItOnce(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	openCheckout(t, ctx, c)
	var ids []string
	for range 2 {
		before, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#card-field iframe').src`))
		require.NoError(t, err)
		typeCard(t, cardField(t, ctx), "4242424242424242")
		out := act(t, ctx, "save")
		require.Equal(t, "saved", out.Status, "%+v", out)
		id := regexp.MustCompile(`card_[A-Za-z0-9]+`).FindString(out.Text)
		ids = append(ids, id)
		c.waitEvent(t, "card.created", id)
		// The page mounts a field of a new card session after a save; the
		// webhook can arrive before it starts to, so wait for the new
		// field itself, not only for a ready one.
		_, err = chromedp.Run(step(t, ctx), chromedp.Poll[bool](fmt.Sprintf(
			`(() => { const f = document.querySelector('#card-field iframe'); return !!f && f.src !== %q && document.body.dataset.field === 'ready'; })()`,
			before)))
		require.NoError(t, err)
	}
	require.NotEqual(t, ids[0], ids[1], "keelpay saves a card each time")
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#saved-cards option')).map(o => o.textContent)`))
	require.NoError(t, err)
	require.Equal(t, []string{"Visa •••• 4242  12/30"}, labels)
	// After a reload too, from the store's list.
	openCheckout(t, ctx, c)
	require.NoError(t, chromedp.Do(step(t, ctx), chromedp.WaitReady(chromedp.CSS(`#saved-cards option[value^="card_"]`))))
	labels, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('#saved-cards option')).map(o => o.textContent)`))
	require.NoError(t, err)
	require.Equal(t, []string{"Visa •••• 4242  12/30"}, labels)
}

// TestBrowserFitsA390PixelScreen: on a phone-sized screen the page does
// not scroll sideways and a whole card number shows in the field.
func TestBrowserFitsA390PixelScreen(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)))
	openCheckout(t, ctx, c)
	field := cardField(t, ctx)
	for _, number := range []string{"4242 4242 4242 4242", "5555 5555 5555 4444"} {
		typeInto(t, field, "number", number)
		fit, err := chromedp.Run(field, chromedp.Evaluate[struct {
			Scroll     float64 `json:"scroll"`
			Client     float64 `json:"client"`
			TextRight  float64 `json:"textRight"`
			BrandLeft  float64 `json:"brandLeft"`
			BrandRight float64 `json:"brandRight"`
			Right      float64 `json:"right"`
		}](`(() => {
			const i = document.getElementById('number'), b = document.getElementById('number-brand');
			const r = i.getBoundingClientRect(), br = b.getBoundingClientRect();
			return {scroll: i.scrollWidth, client: i.clientWidth, textRight: r.right - parseFloat(getComputedStyle(i).paddingRight),
				brandLeft: br.left, brandRight: br.right, right: r.right};
		})()`))
		require.NoError(t, err)
		require.LessOrEqual(t, fit.Scroll, fit.Client, "%s is clipped in the card number input: %+v", number, fit)
		require.Positive(t, fit.BrandRight-fit.BrandLeft, "no brand shown for %s", number)
		require.GreaterOrEqual(t, fit.BrandLeft, fit.TextRight, "the brand covers the number %s: %+v", number, fit)
		require.LessOrEqual(t, fit.BrandRight, fit.Right, "the brand is clipped: %+v", fit)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Scroll float64 `json:"scroll"`
		Width  float64 `json:"width"`
	}](`({scroll: document.documentElement.scrollWidth, width: window.innerWidth})`))
	require.NoError(t, err)
	require.Equal(t, 390.0, page.Width)
	require.LessOrEqual(t, page.Scroll, page.Width, "the page scrolls sideways")
	// The field's frame is as tall as the field: no empty band below it.
	frameHeight, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector('#card-field iframe').getBoundingClientRect().height`))
	require.NoError(t, err)
	formHeight, err := chromedp.Run(field, chromedp.Evaluate[float64](`document.querySelector('form').getBoundingClientRect().height`))
	require.NoError(t, err)
	require.InDelta(t, formHeight, frameHeight, 12, "the card field's frame is %v px tall for a form of %v px", frameHeight, formHeight)
	screenshot(t, ctx, "checkout-390px.png")
}

func TestBrowserDeclinedCardIsExplainedInTheBuyersLanguage(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	for _, tc := range []struct {
		locale, label, message string
	}{
		{"en", "Card number", "Your bank declined the payment. Please use another card or contact your bank."},
		{"fi", "Kortin numero", "Pankkisi hylkäsi maksun. Käytä toista korttia tai ota yhteyttä pankkiisi."},
	} {
		t.Run(tc.locale, func(t *testing.T) {
			openCheckout(t, ctx, c)
			// Choosing the language mounts a field in it.
			require.NoError(t, chromedp.Do(step(t, ctx),
				chromedp.Evaluate[chromedp.Void](`(() => {
					const s = document.getElementById('locale');
					s.value = '`+tc.locale+`';
					s.dispatchEvent(new Event('change'));
				})()`),
				chromedp.WaitReady(chromedp.CSS(`body[data-field="ready"]`)),
			))
			field := cardField(t, ctx)
			label, err := chromedp.Run(field, chromedp.Text(chromedp.ID("number-label")))
			require.NoError(t, err)
			require.Equal(t, tc.label, label)

			typeCard(t, field, "4000000000000002")
			out := act(t, ctx, "pay")
			require.Equal(t, "requires_payment_method", out.Status, "%+v", out)
			require.Equal(t, "card_declined", out.Code)
			require.Equal(t, tc.message, out.Message)
			screenshot(t, ctx, "checkout-declined-"+tc.locale+".png")
			c.waitEvent(t, "payment_intent.payment_failed", out.Intent)
		})
	}
	c.requireNeverSaw(t, "4000000000000002")
}

func TestBrowserStorePageCannotReadTheCard(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	openCheckout(t, ctx, c)
	// Record every message the store's page receives.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`
		window.seen = [];
		window.addEventListener('message', e => window.seen.push(JSON.stringify(e.data)));`)))

	field := cardField(t, ctx)
	typeCard(t, field, "5555555555554444")
	typed, err := chromedp.Run(field, chromedp.Value(chromedp.ID("number")))
	require.NoError(t, err)
	require.Equal(t, "5555 5555 5555 4444", typed, "the field formats the number as it is typed")
	brand, err := chromedp.Run(field, chromedp.TextContent(chromedp.ID("number-brand")))
	require.NoError(t, err)
	require.Equal(t, "Mastercard", brand)

	type view struct {
		ContentDocumentNull bool   `json:"contentDocumentNull"`
		ReadError           string `json:"readError"`
		InPage              bool   `json:"inPage"`
		InMessages          bool   `json:"inMessages"`
		Messages            int    `json:"messages"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[view](`(() => {
		const f = document.querySelector('#card-field iframe');
		let readError = '';
		try { f.contentWindow.document.getElementById('number').value; } catch (e) { readError = e.name; }
		const card = /5555.?5555.?5555.?4444/;
		return {
			contentDocumentNull: f.contentDocument === null,
			readError,
			inPage: card.test(document.documentElement.outerHTML) || card.test(f.src),
			inMessages: window.seen.some(m => card.test(m)),
			messages: window.seen.length,
		};
	})()`))
	require.NoError(t, err)
	require.Equal(t, view{ContentDocumentNull: true, ReadError: "SecurityError", Messages: got.Messages}, got)
	require.NotZero(t, got.Messages, "the field did tell the page about the input")

	out := act(t, ctx, "pay")
	require.Equal(t, "succeeded", out.Status, "%+v", out)
	require.Equal(t, "Paid 25.00 EUR with Mastercard •••• 4444 ("+out.Intent+").", out.Text)
	inMessages, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.seen.some(m => /5555.?5555.?5555.?4444/.test(m))`))
	require.NoError(t, err)
	require.False(t, inMessages)
	c.requireNeverSaw(t, "5555555555554444")
}

// TestBrowserCardFieldValidatesAsTheBuyerTypes: the reference server's
// sandbox has a browser element, so the field mounts it: the element
// checks the card as the buyer types and the field shows its errors in
// the buyer's words; a card the element refuses never reaches keelpay.
func TestBrowserCardFieldValidatesAsTheBuyerTypes(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	openCheckout(t, ctx, c)
	field := cardField(t, ctx)

	type input struct {
		Value   string `json:"value"`
		Label   string `json:"label"`
		Invalid string `json:"invalid"`
	}
	read := func(id string) input {
		t.Helper()
		v, err := chromedp.Run(field, chromedp.Evaluate[input](`(() => {
			const i = document.getElementById('`+id+`');
			return {value: i.value, label: i.labels[0].textContent, invalid: i.getAttribute('aria-invalid')};
		})()`))
		require.NoError(t, err)
		return v
	}
	cardError := func() string {
		t.Helper()
		text, err := chromedp.Run(field, chromedp.Evaluate[string](`document.getElementById('card-error').textContent`))
		require.NoError(t, err)
		return text
	}

	// A number that fails Luhn is marked at once; the field says why.
	typeInto(t, field, "number", "4242424242424241")
	typeInto(t, field, "expiry", "0120")
	require.Equal(t, input{Value: "4242 4242 4242 4241", Label: "Card number", Invalid: "true"}, read("number"))
	require.Equal(t, "Your card number is not valid.", cardError())
	typeInto(t, field, "cvc", "1")
	require.Equal(t, input{Value: "01 / 20", Label: "Expiry date (MM / YY)", Invalid: "true"}, read("expiry"))

	// Saving checks the name first, then the element's card; the store's
	// page gets a validation_error it can put in words; nothing reaches
	// the API.
	captures := requestCount(t, "POST /v1/card_sessions/{id}/cards")
	out := act(t, ctx, "save")
	require.Equal(t, "error", out.Status)
	require.Equal(t, "validation_error", out.Code)
	require.Equal(t, "Enter the name on the card.", out.Message, "the first invalid input is the name")
	nameError, err := chromedp.Run(field, chromedp.Text(chromedp.ID("name-error")))
	require.NoError(t, err)
	require.Equal(t, "Enter the name on the card.", nameError)
	focused, err := chromedp.Run(field, chromedp.Evaluate[string](`document.activeElement.id`))
	require.NoError(t, err)
	require.Equal(t, "name", focused, "the first invalid input has the focus")
	live, err := chromedp.Run(field, chromedp.Evaluate[string](`document.querySelector('[aria-live]').getAttribute('role')`))
	require.NoError(t, err)
	require.Equal(t, "status", live)

	typeInto(t, field, "name", "Sandbox Buyer")
	out = act(t, ctx, "save")
	require.Equal(t, "validation_error", out.Code)
	require.Equal(t, "Your card number is not valid.", out.Message)
	focused, err = chromedp.Run(field, chromedp.Evaluate[string](`document.activeElement.id`))
	require.NoError(t, err)
	require.Equal(t, "number", focused, "the element focuses its first invalid input")

	// Corrected as the buyer types; an amex number has its own grouping
	// and a four-digit code.
	typeInto(t, field, "number", "378282246310005")
	typeInto(t, field, "expiry", "1230")
	require.Equal(t, input{Value: "3782 822463 10005", Label: "Card number", Invalid: "false"}, read("number"))
	typeInto(t, field, "cvc", "123")
	out = act(t, ctx, "save")
	require.Equal(t, "validation_error", out.Code)
	require.Equal(t, "The security code is not valid.", out.Message)
	require.Equal(t, "The security code is incomplete.", cardError(), "amex has four digits")
	require.Equal(t, captures, requestCount(t, "POST /v1/card_sessions/{id}/cards"))

	typeInto(t, field, "cvc", "1234")
	out = act(t, ctx, "save")
	require.Equal(t, "saved", out.Status, "%+v", out)
	require.Contains(t, out.Text, "American Express •••• 0005")
	require.Equal(t, captures+1, requestCount(t, "POST /v1/card_sessions/{id}/cards"))
	c.requireNeverSaw(t, "4242424242424241", "378282246310005")
}

// thirdOrigin serves pages of an origin that is none of the store's
// (127.0.0.1 on another port): one frames a given address, the other
// posts commands to its sibling frames when its parent asks.
func thirdOrigin(t *testing.T) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/frame":
			fmt.Fprintf(w, `<!doctype html><h1>Another site</h1>
<iframe id="f" src="%s" onload="document.body.dataset.loaded = '1'"></iframe>`, html.EscapeString(r.URL.Query().Get("src")))
		case "/sender":
			fmt.Fprint(w, `<!doctype html><p>Another site's frame</p><script>
addEventListener('message', e => {
  if (e.data !== 'attack') return;
  for (let i = 0; i < parent.frames.length; i++) {
    if (parent.frames[i] === window) continue;
    parent.frames[i].postMessage({type: 'keelpay:capture', id: 1}, '*');
    parent.frames[i].postMessage({type: 'keelpay:confirm', id: 2, paymentIntent: {id: 'pi_x', clientSecret: 'x'}}, '*');
  }
});
</script>`)
		default:
			http.NotFound(w, r)
		}
	}))
	// Another site than the store's (localhost) and keelpay's (127.0.0.1),
	// as evil.example would be: Chromium gives its frames a process of
	// their own.
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.2:0")
	}
	require.NoError(t, err)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func TestBrowserCardFieldShowsOnlyInItsPageOrigins(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	other := thirdOrigin(t)
	session, err := c.srv.api.createCardSession(context.Background(), "cus_demo", c.url)
	require.NoError(t, err)
	fieldURL := func(origin string) string {
		return keelpayURL + "/elements/v1/card?" + url.Values{
			"key": {c.srv.keys.PublishableKey}, "card_session": {session.ID},
			"client_secret": {session.ClientSecret}, "origin": {origin},
		}.Encode()
	}

	// The server allows the field only in the session's page origins.
	resp, err := http.Get(fieldURL(c.url))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "; frame-ancestors "+c.url)
	require.True(t, strings.HasSuffix(resp.Header.Get("Content-Security-Policy"), "; frame-ancestors "+c.url))
	// Another origin is refused: 403, or 400 for 127.0.0.2, which is no
	// page origin at all (http is only for localhost, 127.0.0.1, [::1]).
	resp, err = http.Get(fieldURL(other.URL))
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, []int{http.StatusForbidden, http.StatusBadRequest}, resp.StatusCode)

	for name, origin := range map[string]string{
		// Claiming the store's origin: the browser enforces frame-ancestors.
		"claims the store's origin": c.url,
		// Telling the truth: the server refuses to serve the field.
		"says its own origin": other.URL,
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, chromedp.Do(step(t, ctx),
				chromedp.Navigate(other.URL+"/frame?src="+url.QueryEscape(fieldURL(origin))),
				chromedp.WaitReady(chromedp.CSS(`body[data-loaded="1"]`)),
			))
			f := frame(t, ctx, func(u string) bool {
				return strings.Contains(u, "card_session="+session.ID) && strings.Contains(u, url.QueryEscape(origin))
			})
			type shown struct {
				Location string `json:"location"`
				Inputs   int    `json:"inputs"`
			}
			got, err := chromedp.Run(f, chromedp.Evaluate[shown](
				`({location: location.href, inputs: document.querySelectorAll('input').length})`))
			require.NoError(t, err)
			require.Zero(t, got.Inputs, "%+v", got)
			if origin == c.url {
				require.True(t, strings.HasPrefix(got.Location, "chrome-error:"), "%+v", got)
			}
		})
	}
}

func TestBrowserCardFieldIgnoresMessagesFromOtherOrigins(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	other := thirdOrigin(t)

	// A store page of its own origin with the card field and, beside it, a
	// frame of another site that tries to drive the field.
	ln, origin, err := listen("localhost:0")
	require.NoError(t, err)
	session, err := c.srv.api.createCardSession(context.Background(), "cus_demo", origin)
	require.NoError(t, err)
	page := `<!doctype html><html><head><script src="` + keelpayURL + `/js/v1/keelpay.js"></script></head><body>
<iframe id="other" src="` + other.URL + `/sender"></iframe>
<div id="card"></div>
<script>
const field = Keelpay('` + c.srv.keys.PublishableKey + `').cardField('#card',
  {cardSession: {id: '` + session.ID + `', clientSecret: '` + session.ClientSecret + `'}}, {name: true});
field.on('ready', () => { document.body.dataset.field = 'ready'; });
window.capture = () => field.capture().then(
  card => { document.body.dataset.card = card.id; },
  err => { document.body.dataset.error = err.type; });
</script></body></html>`
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })

	require.NoError(t, chromedp.Do(step(t, ctx),
		chromedp.Navigate(origin),
		chromedp.WaitReady(chromedp.CSS(`body[data-field="ready"]`)),
	))
	field := frame(t, ctx, func(u string) bool { return strings.Contains(u, "card_session="+session.ID) })
	typeCard(t, field, "4242424242424242")
	captures := requestCount(t, "POST /v1/card_sessions/{id}/cards")

	// The other site's frame posts capture and confirm commands to the
	// field: it ignores them, says so on its console, and calls nothing.
	consoleCtx, stop := context.WithCancel(step(t, field))
	defer stop()
	messages := chromedp.Console(consoleCtx)
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](
		`document.getElementById('other').contentWindow.postMessage('attack', '*')`)))
	ignored := 0
	for m, err := range messages {
		require.NoError(t, err)
		if strings.Contains(m.String(), "ignored a message from "+other.URL) {
			if ignored++; ignored == 2 {
				break
			}
		}
	}
	stop()
	require.Equal(t, captures, requestCount(t, "POST /v1/card_sessions/{id}/cards"))
	status, cs := keelpayCall(t, "GET", "/v1/card_sessions/"+session.ID, c.srv.keys.SecretKey, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "open", cs["status"])

	// Its own page still can: the same field captures once.
	require.NoError(t, chromedp.Do(step(t, ctx),
		chromedp.Evaluate[chromedp.Void](`window.capture()`),
		chromedp.WaitReady(chromedp.CSS(`body[data-card]`)),
	))
	cardID, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.card`))
	require.NoError(t, err)
	require.Equal(t, captures+1, requestCount(t, "POST /v1/card_sessions/{id}/cards"))
	_, cs = keelpayCall(t, "GET", "/v1/card_sessions/"+session.ID, c.srv.keys.SecretKey, nil)
	require.Equal(t, "completed", cs["status"])
	require.Equal(t, cardID, cs["card"])
}

func TestBrowserMessagesForTheBuyer(t *testing.T) {
	ctx := newBrowser(t, 2*time.Minute)
	c := startCheckout(t, newClientID(t))
	openCheckout(t, ctx, c)

	codes := []string{"card_declined", "card_rejected", "card_unavailable", "billing_required", "invalid_request",
		"authentication_failed", "authentication_expired", "provider_error", "outcome_unknown",
		"currency_mismatch", "amount_mismatch"}
	codesJSON, err := json.Marshal(codes)
	require.NoError(t, err)
	type table map[string]map[string]string
	got, err := chromedp.Run(ctx, chromedp.Evaluate[table](`(() => {
		const errors = [
			['card_declined', {code: 'card_declined', decline_code: 'generic_decline'}],
			['insufficient_funds', {code: 'card_declined', decline_code: 'insufficient_funds'}],
			['other_decline', {code: 'card_declined', decline_code: 'do_not_honor'}],
			...`+string(codesJSON)+`.filter(c => c !== 'card_declined').map(c => [c, {code: c, message: 'x'}]),
			['unknown', {code: 'something_new'}],
			['none', null],
			['validation_error', new KeelpayError('validation_error', 'x', {field: 'cvc'})],
			['network_error', new KeelpayError('network_error', 'x')],
			['api_card_rejected', new KeelpayError('api_error', 'x', {code: 'card_rejected', status: 422})],
			['api_other', new KeelpayError('api_error', 'x', {code: 'payment_intent_unexpected_state', status: 409})],
		];
		const out = {};
		for (const locale of ['en', 'fi', 'sv', 'de', 'fi-FI', 'xx', undefined]) {
			out[String(locale)] = Object.fromEntries(errors.map(([k, e]) => [k, Keelpay.message(e, locale)]));
		}
		return out;
	})()`))
	require.NoError(t, err)
	en := got["en"]
	for _, locale := range []string{"en", "fi", "sv", "de"} {
		m := got[locale]
		for _, code := range append(codes, "insufficient_funds", "validation_error", "network_error", "api_card_rejected") {
			require.NotEmpty(t, m[code], "%s %s", locale, code)
			require.NotEqual(t, m["unknown"], m[code], "%s %s has its own sentence", locale, code)
			if locale != "en" {
				require.NotEqual(t, en[code], m[code], "%s %s is translated", locale, code)
			}
		}
		require.NotEqual(t, m["card_declined"], m["insufficient_funds"], locale)
		require.Equal(t, m["card_rejected"], m["api_card_rejected"], locale)
		// Unknown codes, no error and API refusals without a buyer's
		// meaning get the general sentence.
		require.Equal(t, m["unknown"], m["none"], locale)
		require.Equal(t, m["unknown"], m["api_other"], locale)
	}
	require.Equal(t, "Your card has insufficient funds. Please use another card.", en["insufficient_funds"])
	require.Equal(t, "Kortilla ei ole riittävästi katetta. Käytä toista korttia.", got["fi"]["insufficient_funds"])
	require.Equal(t, "Ditt kort nekades. Använd ett annat kort.", got["sv"]["other_decline"])
	require.Equal(t, "Die Zahlung konnte nicht abgeschlossen werden. Bitte versuchen Sie es erneut.", got["de"]["unknown"])
	require.Equal(t, got["fi"], got["fi-FI"])
	require.Equal(t, en, got["xx"], "another language falls back to English")
	require.Equal(t, en, got["undefined"])
}
