// Package sandbox is a complete in-process payment provider: it implements
// [provider.Provider] with test cards and test applications, serves its own
// 3D Secure page, and keeps everything it answered in its own SQLite file
// (Config.Path), or in memory for tests. The reference server uses it by
// default; the library's tests use it to drive every path of a payment.
//
//	clock := keelpaytest.NewClock(time.Now())
//	sb := sandbox.New(sandbox.Config{Clock: clock, BaseURL: "http://127.0.0.1:8080"})
//	mux.Handle("/sandbox/3ds/", sb.ChallengeHandler())
//	mux.Handle("/sandbox/elements/", sb.ElementHandler())
//
// # Applications
//
// CheckApplication accepts any client id "app_" followed by letters, digits
// and "_", with the client secret "secret_" and the same suffix (compared in
// constant time); anything else is [provider.KindInvalidCredentials]. The
// merchant id is "merch_" and the suffix, so a repeated setup finds the same
// merchant. Parts of the client id, each followed by "_" or the end, choose
// the outcome once the secret matched:
//
//	_unavailable      KindUnavailable, RetryAfter 30s
//	_not_found        KindAppNotFound
//	_cert_mismatch    KindCertificateMismatch
//	_access_pending   KindAccessPending, RetryAfter 60s
//	_missing_roles    KindMissingRoles, MissingRoles ["payments", "refunds"]
//	_usd, _gbp        the merchant's currency (otherwise EUR)
//
// When several outcome parts appear, the first in this list wins; _usd wins
// over _gbp. [Sandbox.SetApplication] sets the same for any client id.
// [Sandbox.SetUnavailable] and [Sandbox.SetAccessPending] switch the whole
// provider off (or its access to pending) for every call.
//
// # Cards
//
// The test cards are the Card constants ([CardVisa], [CardThreeDSecure],
// [CardOutcomeUnknown], ...). A card charged as a new card is tokenised
// first, so [CardRejected] is a failed charge with card_rejected there and a
// [provider.KindCardRejected] error from SaveCard. [CardUnavailable] fails
// only when charged as a saved card. The sandbox implements
// [provider.CardDetacher]: a card a store deleted ([Sandbox.DetachCard])
// fails as [CardUnavailable] does at every later charge.
//
// # The browser element
//
// The sandbox implements [provider.BrowserCapture], so keelpay's hosted card
// field mounts the sandbox's element rather than taking the card itself:
// [Sandbox.BrowserElement] names its script, BaseURL +
// "/sandbox/elements/v1/element.js", served with the sandbox's own route
// POST /sandbox/elements/v1/payment_methods by [Sandbox.ElementHandler]
// (mount it where ChallengeHandler is). The script speaks Stripe.js's
// subset that the card field uses (KeelpaySandbox(key).elements().create,
// mount, on('change'), createPaymentMethod); the route keeps a payment
// method (pm_...) of the key's merchant, which SaveCard and Charge take as
// [provider.SaveCardRequest.PaymentMethod] with the same test-card
// behaviours as a typed number. Another merchant's or an unknown payment
// method is card_rejected. The typed card keeps working: it is the
// documented API flow.
//
// # Attempts and time
//
// Every charge and refund is kept by merchant and attempt id, and a repeated
// call returns the stored outcome: [Sandbox.Charges], [Sandbox.ChargeCount],
// [Sandbox.Voids], [Sandbox.Refunds] and [Sandbox.RefundCount] count the
// money that actually moved.
//
// # Durability
//
// With a Config.Path, every answer (a charge, a void, a refund, a saved
// card, a challenge's answer, an unknown outcome's resolution) is committed
// to the file before it is returned, so a sandbox reopened on the file after
// its process was killed answers every lookup as before, and a repeated
// attempt still never charges or pays out twice. The file holds no card
// number and no CVC: a card is kept as what it does, its brand, last4 and
// expiry. Nothing is kept in memory but the configuration switches.
// Time is the configured clock's: unknown outcomes resolve [ResolveAfter]
// after the attempt, when they are next looked at; a 3D Secure challenge
// expires [ChallengeTimeout] after the charge.
//
// # 3D Secure
//
// A charge of [CardThreeDSecure] returns [provider.ChargeRequiresAction] with
// an ActionURL of BaseURL + "/sandbox/3ds/" + the challenge id, served by
// [Sandbox.ChallengeHandler]. The page shows the amount and the merchant and
// a Complete and a Fail button; [Sandbox.AnswerChallenge] does the same from
// Go. After an answer the sandbox calls the [provider.NotifyFunc] set with
// [Sandbox.SetNotifier]; the service then looks the charge up. Unknown
// outcomes do not notify: the service polls for them.
//
// # Refunds that fail later
//
// A refund of [CardRefundFailsLater] succeeds and fails [ResolveAfter]
// later. The sandbox finds that on its clock when [Sandbox.Settle] (or a
// call that settles due outcomes) runs, and then calls the function set
// with [Sandbox.SetRefundNotifier] with the refund send's attempt id.
//
// # Voids that do not hold
//
// [Sandbox.Void] returns nil only once the void holds. The void of
// [CardAmountMismatchVoidPending] stays pending ([provider.KindOutcomeUnknown])
// for [ResolveAfter]; the first void of [CardAmountMismatchVoidFailsLater]
// holds and fails [ResolveAfter] later, found by [Sandbox.Settle], which
// then calls the [provider.NotifyFunc] set with [Sandbox.SetNotifier] with
// the charge's attempt id.
//
// # Webhook faults
//
// [WebhookFaults] makes a store's webhook deliveries misbehave on purpose
// within the delivery contract (duplicates, reordering, delays, failures;
// see [Faults]), so that a receiver can be rehearsed against what
// production does by accident. The reference server in sandbox mode puts
// one in front of its dispatcher's attempts and serves it at
// /sandbox/webhooks/faults (docs/sandbox.md); the library's dispatcher has
// no public hook for it, so a production dispatcher never misbehaves:
//
//	curl -X POST $KEELPAY/sandbox/webhooks/faults -H "Authorization: Bearer $SK" \
//	    -d '{"duplicate": 1, "seed": 1}'
package sandbox
