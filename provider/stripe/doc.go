// Package stripe is keelpay's adapter for Stripe, on Stripe's official Go
// library (stripe-go). It is a module of its own, which requires keelpay's
// and is not required by it, so that a service that does not use Stripe
// never downloads stripe-go. The reference server with Stripe is the
// command cmd/refserver-stripe, a module of its own: with -provider stripe
// it builds the adapter from the environment and mounts its routes as
// below.
//
//	p, err := stripe.New(stripe.Config{
//		Accounts: []stripe.Account{{ID: "acct_...", Key: "rk_live_...",
//			WebhookSecret: "whsec_...", PublishableKey: "pk_live_..."}},
//		ReturnURL: "https://pay.example.com/stripe/return",
//	})
//	mux.Handle("/stripe/return", p.ReturnHandler())
//	mux.Handle("/stripe/webhook", p.WebhookHandler())
//	// p is a provider.Provider, a provider.Notifier, a
//	// provider.RefundNotifier and a provider.BrowserCapture.
//
// # Setup
//
// A store's client_id is its Stripe account id and its client secret a
// restricted key of that account. CheckApplication reads the account with
// the key: 401 is invalid_credentials; an account other than client_id is
// client_app_not_found; an account that cannot take charges yet is
// platform_access_pending; a key without a permission of
// [RequiredPermissions] (events:read among them, for webhooks of accounts
// without a configured secret) is missing_roles naming them; 429 and 5xx
// are provider_api_unavailable with Stripe's Retry-After when Stripe sent
// one. The store's currency is the account's default currency, which must
// have two decimal places: keelpay's amounts are hundredths, and Stripe
// takes a zero-decimal currency such as JPY in whole units
// (docs.stripe.com/currencies#zero-decimal), so such an account is refused
// at setup, as is a three-decimal one.
//
// # Charges
//
// A saved card is a Customer with a PaymentMethod attached; its token is
// "cus_.../pm_...". A charge is a PaymentIntent created and confirmed at
// once, with the attempt id as its Idempotency-Key and in its metadata
// ([MetaAttempt], [MetaMerchant]). A charge makes no search: within 24
// hours a repeat of the attempt replays Stripe's first answer under the
// same key (and the adapter then reads the PaymentIntent by id, so a void
// since shows), and the service never repeats an attempt later than that.
// Stripe's search is eventually consistent, can be unavailable (it is not
// offered to accounts in India) and allows 20 requests a second
// (docs.stripe.com/search, docs.stripe.com/rate-limits), so a charge must
// not depend on it.
//
// A succeeded charge's amount is what Stripe received (amount_received).
// A decline keeps Stripe's decline_code; a card that needs 3D Secure gives
// Stripe's redirect URL as the action URL, and Stripe sends the buyer back
// to [Provider.ReturnHandler], which notifies the service. Stripe's
// webhooks reach [Provider.WebhookHandler], which verifies them and
// notifies the service too: of charges through [provider.Notifier], of
// refunds through [provider.RefundNotifier].
//
// stripe-go never repeats a request by itself here. On a call that may
// move money (creating a PaymentIntent or a Refund, cancelling) only a 429
// whose code is rate_limit is "unavailable, nothing done"; a 429
// lock_timeout, any other 429, a 409, a 5xx or no answer is an unknown
// outcome, and the service looks the attempt up.
//
// Every metadata key and value the adapter writes is checked against
// Stripe's limits (50 keys, keys of 40 characters, values of 500:
// docs.stripe.com/metadata) before any call.
//
// # Looking an attempt up
//
// Stripe offers these ways to find a PaymentIntent by its attempt id:
//
//   - By id: a read of a PaymentIntent by its id is consistent. The adapter
//     keeps a bounded in-memory hint from attempt id to PaymentIntent id
//     (Config.HintSize, 10,000 by default, the oldest forgotten first),
//     filled by Charge, the 3D Secure return route and webhooks. It is a
//     hint only, never authoritative: it is lost at a restart, and a
//     PaymentIntent read through it counts only when its metadata names the
//     attempt and the merchant.
//   - Search (metadata['keelpay_attempt_id']) is eventually consistent: a
//     PaymentIntent appears in it typically within a minute, later during
//     Stripe's incidents.
//   - The idempotency key: Stripe keeps each key for 24 hours, and
//     answers a request that reuses one with other parameters with an
//     idempotency error (409 while the first request still runs). A create
//     sent under the key with only a parameter Stripe does not know
//     (keelpay_probe) is, when the key is new, refused in validation, and
//     Stripe saves nothing for it. The probe fails closed: only Stripe's
//     exact refusal of that parameter (400 invalid_request_error, code
//     parameter_unknown, param keelpay_probe) means "key unused"; any other
//     answer is an unknown outcome (or unavailable), never "unused". It
//     relies on Stripe checking the key before it validates the parameters,
//     which Stripe does not document; the test-mode run checks it.
//   - Lists are consistent, but only by customer or PaymentIntent; the
//     adapter lists a PaymentIntent's refunds.
//
// The rule: LookupCharge reads the hinted PaymentIntent by id; without a
// hint (after a restart) it searches, and reads a PaymentIntent found by
// id. When neither shows one, the idempotency key decides: in use, the
// attempt is [provider.ChargePending] (Stripe has it, the search does not
// show it yet); not in use, [provider.ErrUnknownAttempt]. That answer is
// sound because the sources cover each other: an attempt charged in the
// last 24 hours holds its key, and one charged earlier has been in the
// search for a day. Any error of a source is an error, never
// ErrUnknownAttempt. So a buyer who passes 3D Secure and comes back sees
// the charge succeed at once, whatever the search's lag.
//
// # Voids and refunds to their final status
//
// A Stripe refund can be pending, then succeed or fail, and can fail after
// it succeeded (docs.stripe.com/api/refunds/object; the test card
// 4000000000005126 does so). Void cancels an open PaymentIntent and
// refunds a succeeded one with the attempt id in the refund's metadata
// (keelpay_void_of). It returns nil only once that refund succeeded: a
// pending one is an unknown outcome, and when every void refund failed a
// new one is made under the idempotency key attemptID + ":void:" + the
// number of failed ones. LookupCharge reports Voided only while a void
// refund has the status succeeded. A refund send carries its attempt id as
// Idempotency-Key and in its metadata, and marks the PaymentIntent with
// [RefundMarkKey] (a hash of the attempt id, so that the key fits Stripe's
// 40 characters) so that LookupRefund can find it after a restart; with a
// hint it lists the PaymentIntent's refunds directly. A refund that failed,
// even after it succeeded, is [provider.RefundFailed] with Stripe's
// failure_reason in the message. Stripe's refund.updated, refund.failed and
// charge.refund.updated webhooks notify the service.
//
// # Webhooks
//
// An event is verified with the account's WebhookSecret (the
// Stripe-Signature header) when one is configured. An account added by
// CheckApplication at run time has none: its events are verified by
// reading them back from Stripe with the account's key (GET
// /v1/events/{id}; docs.stripe.com/api/events/retrieve), which needs the
// key's events:read permission, and only what Stripe answered is used.
// Notifications run at most 8 at once.
//
// # Card data and PCI scope
//
// With Stripe.js ([Provider.BrowserElement]: the account's PublishableKey,
// Config.JSURL) the card number goes from the buyer's browser to Stripe;
// keelpay receives only the PaymentMethod id (pm_...), attaches it to a new
// Customer and charges it. The deployment then stays out of the card
// data's PCI DSS scope: SAQ A (docs.stripe.com/security/guide).
//
// Sending card numbers typed into keelpay's own card field to Stripe is
// opt-in: Config.RawCardData (KEELPAY_STRIPE_RAW_CARD_DATA=1 in the
// reference server). Stripe accepts raw card numbers through its API only
// on accounts it enabled for raw card data APIs, and the deployment that
// receives and transmits them is in the operator's PCI DSS scope (SAQ D).
// Without the setting, a card number is refused before any call:
// SaveCard with [provider.KindCardRejected] and a charge with card_rejected,
// each with a message naming the setting. With it, on an account Stripe did
// not enable, Stripe refuses the card and the adapter says so the same way,
// never with an unknown outcome.
package stripe
