// Command refserver is keelpay's reference server with the Stripe adapter
// linked in: the command github.com/keelpay/keelpay/cmd/refserver, whose
// documentation gives every flag and variable, with -provider stripe (or
// KEELPAY_PROVIDER=stripe) added. It is a module of its own, above both
// keelpay's and the adapter's, so that keelpay's module never requires the
// adapter, nor stripe-go, and the adapter's module holds the adapter only.
//
//	go install github.com/keelpay/keelpay/cmd/refserver-stripe@latest
//
// or, from a checkout of keelpay:
//
//	cd cmd/refserver-stripe && go run . -provider stripe
//
// Without -provider stripe it serves sandbox mode, as the other command
// does. With it, the account and its secrets come from the environment
// only, and the server refuses to start, naming each one missing, without
// them:
//
//	KEELPAY_STRIPE_ACCOUNT         the Stripe account id (acct_...)
//	KEELPAY_STRIPE_KEY             a restricted key of it (rk_live_... or rk_test_...)
//	KEELPAY_STRIPE_WEBHOOK_SECRET  the signing secret of its webhook endpoint (whsec_...)
//	KEELPAY_PUBLIC_URL             the server's public https URL
//	KEELPAY_STRIPE_API_URL         Stripe's API (default https://api.stripe.com); for a
//	                               fake of Stripe or stripe-mock in tests; shown in the
//	                               banner and the start's log line when set
//	KEELPAY_STRIPE_PUBLISHABLE_KEY optional: the account's pk_live_... or pk_test_..., so
//	                               that the card field captures cards with Stripe.js
//	KEELPAY_STRIPE_JS_URL          optional: Stripe.js's URL (default
//	                               https://js.stripe.com/v3/); for a test's stand-in
//	KEELPAY_STRIPE_RAW_CARD_DATA   1 to send card numbers typed into keelpay's own card
//	                               field to Stripe: only for accounts enabled for raw
//	                               card data APIs, and it puts the server in PCI DSS
//	                               scope (SAQ D); off, a card number is refused
//
// Stripe sends buyers back after 3D Secure to KEELPAY_PUBLIC_URL +
// /stripe/return; point the account's webhook endpoint at
// KEELPAY_PUBLIC_URL + /stripe/webhook.
package main

import (
	"os"

	"github.com/keelpay/keelpay/refserver"
)

func main() {
	os.Exit(refserver.Main(os.Args[1:], os.Stdout, os.Stderr, refserver.WithProvider(stripeProvider)))
}
