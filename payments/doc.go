// Package payments runs card sessions, saved cards and payment intents: the
// state machine of a payment, its provider calls and its events.
//
// service.New builds one, registers its [Service.Notify] with the
// provider, and runs its reconciler ([Service.Reconcile]) and expirer
// ([Service.Expire]) in the background between Start and Stop; httpapi
// serves it. [New] builds one on its own, for a program that assembles
// the parts itself; it returns an error naming every missing or
// out-of-range field of the [Config]. Every method takes the store the
// caller authenticated as; another store's objects are not found.
//
// # Saving a card
//
// [Service.CreateCardSession] opens a session for a customer (open for
// [CardSessionLifetime]); the buyer's browser sends the card with the
// session's client_secret to [Service.CaptureCard], which has the provider
// tokenise it and commits the card, the completed session and the
// card.created event in one transaction. Card numbers and CVCs go to the
// provider only.
//
// # Paying
//
// [Service.CreateIntent] creates an intent in requires_payment_method;
// [Service.ConfirmIntent] charges a saved card or, from the browser, a new
// card. A confirm records the attempt first (processing, a new attempt id)
// and commits it, then charges the provider with the attempt id as its
// idempotency key outside any transaction, then commits the outcome with
// its event: payment_intent.succeeded, or payment_intent.payment_failed with
// last_error and the intent back in requires_payment_method. Because the
// attempt is recorded with a conditional update, concurrent confirms reach
// the provider once. Only requires_payment_method can be confirmed.
//
// A 3D Secure card leaves the intent in requires_action with next_action;
// the provider's notification ([Service.Notify]) or, after
// [ThreeDSecureWait], the reconciler finishes it. When the outcome of a
// charge is unknown the intent stays processing with last_error
// outcome_unknown and the reconciler ([Service.Reconcile]) asks the provider
// 1, 5, 15 and 60 minutes after the attempt, then every 6 hours. A
// charge of another currency or amount is voided and the intent canceled
// (reason voided) once the void holds; until then the attempt stays open
// (processing, last_error the mismatch code) and is voided again at every
// look-up. Every charge voided is listed in the intent's VoidedCharges, and
// its void is looked up again for [LateCheckFor] (and at once on the
// provider's notification about the attempt): a void that failed after it
// held is listed as still charged and made again until it holds. Every one
// of these paths closes the attempt through one function, whatever learned
// the outcome.
//
// A confirm waits for the provider at most Config.AnswerTimeout, then
// answers processing with outcome_unknown while the call goes on and its
// run commits the outcome.
//
// [Service.CancelIntent] cancels an intent in requires_payment_method or
// requires_action (voiding an open 3D Secure attempt first);
// [Service.Expire] cancels those left unconfirmed for [IntentLifetime].
//
// # Requests
//
// Each method judges its parameters once, with their Validate method,
// before anything else: the first failure in the documented field order
// is a 400 invalid_request naming the field. The HTTP API reads its JSON
// bodies into parameters judging only the JSON (types, required fields,
// unknown and duplicate keys), and records what it learnt in their Form;
// Validate then also reports a field of the wrong type in its place in
// the order, and judges a field sent empty ("reference": "") rather than
// taking it as absent. Parameters built in Go, whose Form is nil, are
// judged by the same rules, an empty field being an absent one.
//
// # Idempotency keys
//
// The methods that change things take the caller's idempotency key, an
// [github.com/keelpay/keelpay/idempotency.Key] (the Idempotency field of
// their parameters, or the last argument of [Service.CancelIntent] and
// [Service.ResumeConfirm]); nil is no key. With a key, the step a retry
// must not repeat (a confirm's recorded attempt, a cancel's mark on an
// intent in 3D Secure) is recorded on the key in its own transaction, and
// the change that ends the request stores the request's answer with it.
// [Service.ResumeConfirm] carries a confirm that was cut off after its
// attempt to its end, as the answer to a retry with the same key.
//
// # Wire form
//
// Each object has one rendering, internal to keelpay, for API responses,
// the answers stored with idempotency keys and event bodies alike; only
// responses to the secret key show personal data. [IntentObject] and
// [CardObject] are the types an embedder decodes that JSON into (an
// event's object, see service.Event).
package payments
