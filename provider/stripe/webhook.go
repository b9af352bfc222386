package stripe

import (
	"context"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"strings"

	sg "github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/keelpay/keelpay/provider"
)

// maxWebhookBody bounds a webhook's body; Stripe's events are far smaller.
const maxWebhookBody = 1 << 20

// WebhookHandler receives Stripe's webhooks. An event is trusted only once
// verified, in one of two ways:
//
//   - For an account with a WebhookSecret, the Stripe-Signature header is
//     checked with it (stripe-go's webhook package, docs.stripe.com/webhooks).
//   - For an account without one (an account added by CheckApplication at
//     run time), the event is read back from Stripe with the account's key
//     (GET /v1/events/{id}, which needs the key's events:read permission;
//     docs.stripe.com/api/events/retrieve), and only what Stripe answered is
//     used, never the body that was posted.
//
// For an event about an object the adapter made for that same account, it
// notifies the service: payment_intent.* events call the NotifyFunc with
// the charge's attempt id; refund.updated, refund.failed and
// charge.refund.updated call the RefundNotifier function with the refund's
// attempt id, or, for the refund of a void (metadata keelpay_void_of), the
// NotifyFunc with the voided charge's attempt id. The event also fills the
// hints from attempt id to PaymentIntent. The service then looks the
// attempt up: the event's content is not trusted beyond naming it.
// Notifications run at most maxNotifying at once; a webhook waits for a
// place while its request lasts.
//
// A body that no account verifies is refused with 400, so Stripe's
// dashboard shows the failure; any verified event is answered 200.
//
// Subscribe the endpoint to payment_intent.succeeded,
// payment_intent.payment_failed, payment_intent.canceled,
// payment_intent.requires_action, refund.updated, refund.failed and
// charge.refund.updated.
func (p *Provider) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "cannot read the body", http.StatusBadRequest)
			return
		}
		ev, account, status := p.verify(r.Context(), body, r.Header.Get("Stripe-Signature"))
		if account == "" {
			http.Error(w, "the event does not verify", status)
			return
		}
		p.handleEvent(r.Context(), account, ev)
		w.WriteHeader(http.StatusOK)
	})
}

// verify returns the verified event and its account, or no account and the
// status to answer.
func (p *Provider) verify(ctx context.Context, body []byte, sig string) (sg.Event, string, int) {
	var unsigned []Account
	for _, a := range p.accountList() {
		if a.WebhookSecret == "" {
			unsigned = append(unsigned, a)
			continue
		}
		e, err := webhook.ConstructEventWithOptions(body, sig, a.WebhookSecret, webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
		if err == nil {
			return e, a.ID, http.StatusOK
		}
	}
	if len(unsigned) == 0 {
		return sg.Event{}, "", http.StatusBadRequest
	}
	var posted struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &posted) != nil || !strings.HasPrefix(posted.ID, "evt_") || len(posted.ID) > 255 {
		return sg.Event{}, "", http.StatusBadRequest
	}
	status := http.StatusBadRequest
	for _, a := range unsigned {
		e, err := p.clientFor(a.Key).V1Events.Retrieve(ctx, posted.ID, nil)
		if err == nil && e.ID == posted.ID {
			return *e, a.ID, http.StatusOK
		}
		if se, ok := asStripe(err); !ok || se.HTTPStatusCode >= 500 || se.HTTPStatusCode == http.StatusTooManyRequests {
			// Stripe could not say: answer 503 so that Stripe sends the
			// event again.
			status = http.StatusServiceUnavailable
		}
	}
	return sg.Event{}, "", status
}

// handleEvent notifies the service of a verified event of account.
func (p *Provider) handleEvent(ctx context.Context, account string, ev sg.Event) {
	if ev.Data == nil {
		return
	}
	var obj struct {
		ID            string            `json:"id"`
		Object        string            `json:"object"`
		Metadata      map[string]string `json:"metadata"`
		PaymentIntent json.RawMessage   `json:"payment_intent"`
	}
	if json.Unmarshal(ev.Data.Raw, &obj) != nil || obj.Metadata[MetaMerchant] != account {
		return
	}
	typ := string(ev.Type)
	switch {
	case strings.HasPrefix(typ, "payment_intent.") && obj.Object == "payment_intent":
		attempt := obj.Metadata[MetaAttempt]
		if attempt == "" {
			return
		}
		p.hintCharge(account, attempt, obj.ID)
		p.notifyLater(ctx, p.notifier(), account, attempt)
	case (typ == "refund.updated" || typ == "refund.failed" || typ == "refund.created" || typ == "charge.refund.updated") && obj.Object == "refund":
		piID := rawID(obj.PaymentIntent)
		if voidOf := obj.Metadata[MetaVoidOf]; voidOf != "" {
			p.hintCharge(account, voidOf, piID)
			p.notifyLater(ctx, p.notifier(), account, voidOf)
			return
		}
		if attempt := obj.Metadata[MetaAttempt]; attempt != "" {
			p.hintRefund(account, attempt, piID)
			p.notifyLater(ctx, p.refundNotifier(), account, attempt)
		}
	}
}

// rawID is the id of a field that is an id or an expanded object.
func rawID(raw json.RawMessage) string {
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.ID
}

// notifyLater runs notify in a goroutine once one of maxNotifying places is
// free, waiting for one while ctx (the webhook's request) lasts; a
// notification that finds no place is dropped: the service polls too.
func (p *Provider) notifyLater(ctx context.Context, notify provider.NotifyFunc, merchantID, attemptID string) {
	if notify == nil {
		return
	}
	select {
	case p.notifying <- struct{}{}:
	case <-ctx.Done():
		return
	}
	go func() {
		defer func() { <-p.notifying }()
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), provider.CallTimeoutDefault)
		defer cancel()
		notify(nctx, merchantID, attemptID)
	}()
}

var returnPage = template.Must(template.New("return").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Payment</title></head>
<body><p>Thank you. Your payment is being completed; you can close this page.</p></body></html>
`))

// ReturnHandler is the route Stripe sends the buyer back to after 3D
// Secure (Config.ReturnURL, with the account and payment_intent in its
// query). It reads the PaymentIntent from Stripe, and when it is one the
// adapter made for that account, notifies the service, which then looks
// the attempt up. It then redirects to Config.AfterReturnURL, or shows a
// short page. Nothing in the query is trusted beyond naming what to read.
func (p *Provider) ReturnHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		account, piID := q.Get("account"), q.Get("payment_intent")
		if cl, err := p.client(account); err == nil && strings.HasPrefix(piID, "pi_") {
			pi, err := cl.V1PaymentIntents.Retrieve(r.Context(), piID, nil)
			if err == nil && pi.Metadata[MetaMerchant] == account && pi.Metadata[MetaAttempt] != "" {
				// The PaymentIntent is read by its id from Stripe: the
				// look-up that follows reads it by id too.
				p.hintCharge(account, pi.Metadata[MetaAttempt], pi.ID)
				if notify := p.notifier(); notify != nil {
					notify(context.WithoutCancel(r.Context()), account, pi.Metadata[MetaAttempt])
				}
			}
		}
		if p.cfg.AfterReturnURL != "" {
			http.Redirect(w, r, p.cfg.AfterReturnURL, http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = returnPage.Execute(w, nil)
	})
}
