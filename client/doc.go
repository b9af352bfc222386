// Package client is the Go client of keelpay's HTTP API (docs/api.md):
// typed params and objects for every operation of a store's secret key,
// the API's errors as values, and the retries docs/errors.md prescribes,
// each POST with one Idempotency-Key across its tries.
//
// It imports only the root package github.com/keelpay/keelpay (codes,
// statuses and the small shared types), never the services or a database
// driver: a program that calls a remote keelpay pulls in nothing else.
//
// # Tutorial
//
// Set a store up once with the application's credentials at the payment
// provider, and keep the secret key and webhook secret it answers:
//
//	setup, _ := client.New("https://pay.example.com", "")
//	store, err := setup.Setup(ctx, &client.SetupParams{
//		ClientID: "...", ClientSecret: "...", WebhookURL: "https://shop.example/webhooks",
//	})
//
// Then act as the store with its secret key. A card session lets the
// buyer's browser save a card (the hosted card field does the capture
// with the publishable key); an intent charges it:
//
//	kp, _ := client.New("https://pay.example.com", store.SecretKey)
//	cs, err := kp.CreateCardSession(ctx, &client.CardSessionParams{
//		Customer: customer, PageOrigins: []string{"https://shop.example"},
//	})
//	// ... the browser saves card_... through cs.ClientSecret ...
//	pi, err := kp.CreatePaymentIntent(ctx, &client.PaymentIntentParams{
//		Amount: 1999, Currency: "EUR", Customer: customer, PaymentMethod: cardID,
//		IdempotencyKey: "order-1042",
//	})
//	pi, err = kp.ConfirmPaymentIntent(ctx, pi.ID, nil)
//	switch pi.Status {
//	case keelpay.IntentSucceeded: // paid
//	case keelpay.IntentRequiresAction: // send the buyer to pi.NextAction.URL
//	case keelpay.IntentProcessing: // do not charge again: wait for the webhook
//	case keelpay.IntentRequiresPaymentMethod: // failed: pi.LastError says why
//	}
//
// A failed payment attempt is not an error; an error is an answer the API
// refused, or a call that got no answer:
//
//	var kerr *keelpay.Error
//	if errors.As(err, &kerr) && kerr.Code == keelpay.CodePaymentIntentNotFound { ... }
//	var cerr *client.Error // the HTTP status and Request-Id around it
//
// Lists ([Client.ListPaymentIntents], [Client.ListEvents],
// [Client.ListEventAttempts]) return one page, [List], with cursors in
// [ListParams]; [Client.PaymentIntents] and [Client.Events] iterate over
// all pages:
//
//	for pi, err := range kp.PaymentIntents(ctx, &client.ListParams{Limit: 100}) { ... }
//
// # Retries and idempotency
//
// Every POST carries an Idempotency-Key: the params' IdempotencyKey (use
// one per business operation, an order number say), or one the client
// makes for the call. All tries of a call send the same key, so keelpay
// does the work once and answers a repeated try with the stored answer
// ([Response.IdempotentReplayed]). The client repeats, by the rules of
// docs/errors.md:
//
//   - 429 and 503 with Retry-After: after those seconds;
//   - 500, and a try that got no complete answer (a network error, a
//     dropped connection): after a backoff that starts at
//     [Config.BackoffInitial] and doubles up to [Config.BackoffMax];
//   - 409 setup_conflict: at once;
//   - 409 idempotency_key_in_use and refund_in_progress: after Retry-After.
//
// Nothing else is repeated (400, 401, 404, the other 409s, 413, 415, 422,
// and a 503 without Retry-After). A call makes at most
// [Config.MaxAttempts] tries, and does not wait longer than
// [Config.MaxRetryAfter] for a Retry-After: it returns the answer instead,
// whose RetryAfter says how long. The context's deadline or cancellation
// stops the waiting; the error then wraps both the context's error and
// the last answer.
package client
