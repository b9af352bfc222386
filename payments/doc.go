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
// (reason voided). Every one of these paths closes the attempt through one
// function, whatever learned the outcome.
//
// [Service.CancelIntent] cancels an intent in requires_payment_method or
// requires_action (voiding an open 3D Secure attempt first);
// [Service.Expire] cancels those left unconfirmed for [IntentLifetime].
//
// # Wire form
//
// [NewIntentObject], [NewCardObject] and [NewCardSessionObject] give the
// JSON form of the objects for API responses and events alike; only
// responses to the secret key show personal data.
package payments
