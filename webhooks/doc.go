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
// mounts a [Handler] at its webhook_url:
//
//	v, err := webhooks.NewVerifier([]string{os.Getenv("WEBHOOK_SECRET")})
//	if err != nil {
//		return err
//	}
//	h := webhooks.NewDurableHandler(v,
//		func(ctx context.Context, e webhooks.Event, body []byte) error {
//			// in one transaction: record e.ID, act on e
//			return nil
//		})
//	mux.Handle("POST /webhooks/keelpay", h)
//	// at shutdown, after srv.Shutdown(ctx):
//	err = h.Close(ctx)
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
// # Two ways to process: answer first, or process first
//
// The service counts any answer other than a 2xx within 10 seconds as a
// failure and retries, 1 minute later first (docs/webhooks.md). A store
// chooses between two handlers, both a [Handler]:
//
//   - [NewAsyncHandler] (and [NewHandler], the same as a [net/http.Handler])
//     answers 204 as soon as the signature is valid and calls the processing
//     function afterwards, on its own goroutine, as the reference receiver
//     does: slow processing never turns into a retry, and the service's
//     workers are not held by the store. Once the 204 is sent the event is
//     the store's: if its process dies, or fn panics, before the event is
//     recorded, the service does not send it again (GET /v1/events still
//     lists it).
//   - [NewDurableHandler] calls the function first and answers 204 only when
//     it returned nil, 500 when it failed or panicked: every event reaches the
//     store at least once, whatever happens to its process. The function must
//     finish well within the 10 seconds (its context is done when the service
//     gives up) and be idempotent.
//
// Choose the durable handler when the processing is a quick write to the
// store's database (record the event and its effect in one transaction);
// choose the asynchronous one when processing is slow or calls other
// services, and have the function record the event durably first.
//
// # Concurrency, panics and shutdown
//
// A Handler processes at most [DefaultMaxConcurrent] events at a time
// ([WithMaxConcurrent]); a delivery beyond that is answered 503 with
// Retry-After, before its id is recorded, so it comes again later rather
// than being lost (keelpay then also sends fewer at a time). A panic in the
// function is recovered and reported, with an error the durable function
// returned, to [WithErrorHandler] (by default logged with [log/slog]); it
// never stops the process. At shutdown, after [net/http.Server.Shutdown],
// [Handler.Close] turns further deliveries away with 503 and waits for the
// processing still running.
//
// # Repeated deliveries
//
// Delivery is at least once and unordered: the same event may arrive twice,
// even concurrently, and a payment_intent.succeeded may arrive after a later
// event. The handler drops an event id it has seen, through [Seen]; the default
// [MemorySeen] remembers the most recent ids in memory, and a store that must
// be sure across restarts implements [Seen] on its database (with
// [Forgetter] for the durable handler, which forgets the id of an event it
// failed to process).
//
// # Testing the handler
//
// keelpaytest's Kit.RequireHandled returns once a Handler's function has
// returned for a delivery, even when the handler answered first: the kit
// passes requests through [ContextWithProcessing], which a Handler honours.
// [WithDone] does the same for tests without the kit.
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
