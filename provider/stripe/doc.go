// Package stripe is keelpay's adapter for Stripe, on Stripe's official Go
// library (stripe-go). It is a module of its own, so that a service that
// does not use Stripe does not download stripe-go. The keelpay module
// requires it for its reference server only: cmd/refserver -provider
// stripe builds the adapter from the environment and mounts its routes as
// below; a build that does not import this package fetches none of its
// code nor stripe-go's.
//
//	p, err := stripe.New(stripe.Config{
//		Accounts:  []stripe.Account{{ID: "acct_...", Key: "rk_live_...", WebhookSecret: "whsec_..."}},
//		ReturnURL: "https://pay.example.com/stripe/return",
//	})
//	mux.Handle("/stripe/return", p.ReturnHandler())
//	mux.Handle("/stripe/webhook", p.WebhookHandler())
//	// p is a provider.Provider and a provider.Notifier.
//
// # Setup
//
// A store's client_id is its Stripe account id and its client secret a
// restricted key of that account. CheckApplication reads the account with
// the key: 401 is invalid_credentials; an account other than client_id is
// client_app_not_found; an account that cannot take charges yet is
// platform_access_pending; a key without a permission of
// [RequiredPermissions] is missing_roles naming them; 429 and 5xx are
// provider_api_unavailable with Stripe's Retry-After when Stripe sent one.
// The store's currency is the account's default currency.
//
// # Charges
//
// A saved card is a Customer with a PaymentMethod attached; its token is
// "cus_.../pm_...". A charge is a PaymentIntent created and confirmed at
// once, with the attempt id as its Idempotency-Key and in its metadata
// ([MetaAttempt], [MetaMerchant]). A decline keeps Stripe's decline_code; a
// card that needs 3D Secure gives Stripe's redirect URL as the action URL,
// and Stripe sends the buyer back to [Provider.ReturnHandler], which
// notifies the service. Stripe's webhooks reach [Provider.WebhookHandler],
// which verifies them and notifies the service too. A void cancels an open
// PaymentIntent or refunds a succeeded one; a refund carries its attempt
// id as Idempotency-Key and in its metadata.
//
// stripe-go never repeats a request by itself here: a time-out or a 5xx on
// a call that may move money is an unknown outcome, and the service looks
// the attempt up.
//
// # Looking an attempt up
//
// The adapter keeps nothing: every answer comes from Stripe. Stripe offers
// three ways to find a PaymentIntent by its attempt id, none complete on
// its own:
//
//   - Search (metadata['keelpay_attempt_id']) is eventually consistent: a
//     PaymentIntent appears in it typically within a minute, later during
//     Stripe's incidents.
//   - The idempotency key: Stripe keeps each key for 24 hours, and
//     answers a request that reuses one with other parameters with an
//     idempotency error (409 while the first request still runs). A create
//     sent under the key with only a parameter Stripe does not know
//     (keelpay_probe) is, when the key is new, refused in validation, and
//     Stripe saves nothing for it. So it tells, consistently, whether the
//     attempt reached Stripe in the last 24 hours, without creating
//     anything. This relies on Stripe checking the key before it validates
//     the parameters; the test-mode run checks it.
//   - Lists are consistent, but only by customer or PaymentIntent, which a
//     lookup by attempt id does not know; the adapter lists a
//     PaymentIntent's refunds.
//
// The rule: LookupCharge searches; a PaymentIntent found is read again
// directly (a consistent read) and reported. When the search shows none,
// the idempotency key decides: in use, the attempt is [provider.ChargePending]
// (Stripe has it, the search does not show it yet); not in use,
// [provider.ErrUnknownAttempt]. That answer is sound because the two
// sources cover each other: an attempt charged in the last 24 hours holds
// its key, and one charged earlier has been in the search for a day.
// Any error of either source is [provider.KindUnavailable], never
// ErrUnknownAttempt. Void answers the same way, and LookupRefund too, with
// the refund's key; it finds the refund through the PaymentIntent that
// Refund marked with the refund's attempt id (metadata
// keelpay_refund_<attempt id>), then lists that PaymentIntent's refunds.
//
// Charge searches first too, and answers an attempt Stripe already has
// from Stripe: within 24 hours the idempotency key would replay the first
// answer anyway, but after 24 hours it would not, and a repeated attempt
// must never charge twice. A refund lists its PaymentIntent's refunds
// before it creates one, for the same reason. The price: one search per
// charge (Stripe rate-limits search more tightly than other reads), and
// while Stripe's search fails, charges fail as unavailable, doing nothing.
//
// # Card data and PCI scope
//
// keelpay's hosted card field sends the card number to keelpay, which
// passes it to the provider. Stripe accepts raw card numbers through its
// API only on accounts it enabled for raw card data APIs, which requires
// the operator to be PCI DSS validated: the operator's keelpay deployment
// stores nothing of the card but does receive and transmit card numbers,
// so it is in the operator's PCI DSS scope (typically SAQ D), not reduced
// to it by Stripe's hosted elements. On an account without that access,
// Stripe refuses the card: SaveCard fails with [provider.KindCardRejected]
// and a charge with card_rejected, each with a message that says so, never
// with an unknown outcome.
package stripe
