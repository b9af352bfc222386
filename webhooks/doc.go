// Package webhooks signs and verifies the event deliveries of the keelpay
// service and gives stores a ready receiver for them. Deliveries follow the
// Standard Webhooks scheme (docs/webhooks.md): an HMAC-SHA256 over
// "<webhook-id>.<webhook-timestamp>.<body>" with the store's webhook secret,
// sent as "v1,<base64>" in the webhook-signature header. The package imports
// only the standard library.
//
// # Receiving deliveries
//
// A store builds a [Verifier] from the webhook secret it got at setup and
// mounts [NewHandler] at its webhook_url:
//
//	v, err := webhooks.NewVerifier([]string{os.Getenv("WEBHOOK_SECRET")})
//	if err != nil {
//		return err
//	}
//	mux.Handle("POST /webhooks/keelpay", webhooks.NewHandler(v,
//		func(ctx context.Context, e webhooks.Event, body []byte) {
//			// record e durably, then act on it
//		}))
//
// A store with its own HTTP stack calls [Verifier.Verify] with the raw body and
// the headers before decoding anything; it fails with [ErrMissingHeaders],
// [ErrInvalidTimestamp], [ErrTooOld] or [ErrTooNew] (both
// [ErrTimestampOutOfTolerance]), or [ErrNoValidSignature], and the receiver
// answers 400. The body must be verified byte for byte as received: decoding
// and re-encoding the JSON changes it.
//
// # Rotating the secret
//
// After a rotation the service signs only with the new secret (docs/webhooks.md). To
// lose no delivery, a store verifies with both secrets while it switches, and
// drops the old one once the rotation is done:
//
//	v, err := webhooks.NewVerifier([]string{newSecret, oldSecret})
//
// # Answer 204 first, then process
//
// The service counts any answer other than a 2xx within 10 seconds as a
// failure and retries (docs/webhooks.md). The handler of [NewHandler] therefore
// answers 204 as soon as the signature is valid and calls the processing
// function afterwards, on its own goroutine: slow processing never turns into
// a retry, and the service's workers are not held by the store.
//
// # Repeated deliveries
//
// Delivery is at least once and unordered: the same event may arrive twice,
// even concurrently, and a payment_intent.succeeded may arrive after a later
// event. The handler drops an event id it has seen, through [Seen]; the default
// [MemorySeen] remembers the most recent ids in memory, and a store that must
// be sure across restarts implements [Seen] on its database.
//
// # Decide with the object's status
//
// Do not infer state from the order or the type of events. Decode
// [Event].Data.Object and act on its status field; fulfil an order when the
// payment intent's status is succeeded and the order is not fulfilled yet,
// checked and changed in one transaction of the store's own database, so that
// fulfilling twice is impossible whatever arrives twice.
//
// # Sending
//
// The service signs with [Signer]; [Signer.AppendSignature] writes into a
// caller's buffer and allocates nothing. Package webhookstest provides a
// recording receiver for tests of senders.
package webhooks
