// Package keelpaytest runs keelpay inside go test, for the tests of a
// store's own code: no port to choose, no Docker, no network beyond
// loopback.
//
// [Start] starts a complete keelpay for one test: a SQLite database in the
// test's temporary directory (or, with [WithPostgres], a PostgreSQL schema
// of the test's own, dropped when it ends), the in-memory sandbox provider, a manual
// [Clock] shared by both, the API on an httptest server (the sandbox's
// 3D Secure pages beside it), the background workers, and a receiver
// that verifies every webhook. All of it stops when the test ends.
//
//	kp := keelpaytest.Start(t)
//	store := kp.Store(t)                        // keys, webhook secret, a test customer
//	card := store.SaveCard(t, sandbox.CardVisa) // through a card session, as a browser does
//	pi := store.Pay(t, card, 1999, "eur")       // create and confirm
//	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
//
// Point the code under test at [Kit.URL] with [Store.SecretKey], and hand
// its webhook handler to [Kit.HandleWebhooks]: every delivery reaches it,
// signed, after the kit's receiver recorded it, at the path "/" unless
// [WithWebhookPath] names the path the store's mux routes.
// [Kit.RequireHandled] waits until that handler has finished with a
// delivery: for a handler of package webhooks (NewHandler, NewAsyncHandler,
// NewDurableHandler, behind the store's mux too), until the store's
// function has returned, even when the handler answered 204 before calling
// it; for any other handler, until it returned. What the function did can
// be checked right after. [Kit.Store] takes options: [WithCurrency], and
// [WithClientIDPart] for the sandbox applications that choose other
// setup answers ([Kit.Setup] returns a setup's error).
// [Store.PayWithNewCard] confirms with the publishable key and a new card,
// as the hosted card field does.
//
// # Payments that do not end at once
//
// With sandbox.CardThreeDSecure the confirm answers requires_action;
// [Store.Answer3DS] completes or fails the challenge as the buyer would and
// returns the intent once keelpay knows the answer. With
// sandbox.CardOutcomeUnknown the intent stays processing until keelpay
// asks the provider again: [Kit.Advance] moves the clock and runs what
// became due (expiry, reconciliation of charges and refunds, webhooks)
// before it returns, so kp.Advance(t, 2*time.Minute) settles it. The
// clock is the kit's: on a kit shared by parallel subtests, Advance moves
// the time of all of them.
// [Store.Refund] sends a refund.
//
// # Webhook faults
//
// [WithWebhookFaults] attaches a sandbox.WebhookFaults to the kit, so that
// a test rehearses the store's handler under duplicated, reordered,
// delayed or failed deliveries. Deliveries then leave only when the test
// asks: [Kit.Deliver] sends what is due now, and [Kit.Advance] past a hold
// sends what a fault held back.
//
// # Assertions
//
// [Kit.RequireEvent] waits until a verified delivery of an event of a type
// about an object has arrived, and returns it; [Kit.RequireNoEvent] runs
// what is due, waits until every event committed so far has been
// delivered ([Kit.Drain]) and fails if one matches; [Store.RequireIntentStatus]
// checks an intent's state. They wait on deliveries, never on a fixed
// sleep, and fail after [WithWaitTimeout] (default [WaitTimeoutDefault]).
//
// The kit takes a [T], which *testing.T and *testing.B have. Its parts
// stay reachable for what the helpers do not cover: [Kit.Service],
// [Kit.Sandbox] (switches such as SetUnavailable) and [Kit.Webhooks].
//
// For tests of keelpay's own parts, [NewClock] is a clock that moves only
// when told to, and keyring/keyringtest has the keyring that seals the
// test databases.
// See docs/testing.md.
package keelpaytest
