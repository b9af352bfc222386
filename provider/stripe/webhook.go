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
)

// maxWebhookBody bounds a webhook's body; Stripe's events are far smaller.
const maxWebhookBody = 1 << 20

// WebhookHandler receives Stripe's webhooks. It verifies the
// Stripe-Signature header with the webhook secret of each configured
// account (stripe-go's webhook package), and for an event about a
// PaymentIntent the adapter made for that same account, calls the
// service's NotifyFunc with the account and the attempt id. The service
// then looks the attempt up: the event's content is not trusted beyond
// naming the attempt. A body no secret verifies is refused with 400, so
// Stripe's dashboard shows the failure; any verified event is answered 200,
// so that Stripe does not send it again.
//
// Subscribe the endpoint to payment_intent.succeeded,
// payment_intent.payment_failed, payment_intent.canceled and
// payment_intent.requires_action.
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
		sig := r.Header.Get("Stripe-Signature")
		var ev sg.Event
		var account string
		for _, a := range p.accountList() {
			if a.WebhookSecret == "" {
				continue
			}
			e, err := webhook.ConstructEventWithOptions(body, sig, a.WebhookSecret, webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
			if err == nil {
				ev, account = e, a.ID
				break
			}
		}
		if account == "" {
			http.Error(w, "the signature does not verify", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		if !strings.HasPrefix(string(ev.Type), "payment_intent.") || ev.Data == nil {
			return
		}
		var obj struct {
			Metadata map[string]string `json:"metadata"`
		}
		if json.Unmarshal(ev.Data.Raw, &obj) != nil {
			return
		}
		attempt, merchant := obj.Metadata[MetaAttempt], obj.Metadata[MetaMerchant]
		if attempt == "" || merchant != account {
			return
		}
		if notify := p.notifier(); notify != nil {
			// Like the sandbox's notification, it outlives the request.
			go notify(context.WithoutCancel(r.Context()), merchant, attempt)
		}
	})
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
