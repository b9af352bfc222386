package payments

import "github.com/keelpay/keelpay/internal/render"

// The decoded wire form of cards and payment intents, as an event's
// object carries them (service.Event) and as the API answers: the types
// an embedder decodes those bodies into. Nothing renders from them:
// keelpay renders each object with one function (docs/api.md, "Objects"),
// declared beside the type, and a test holds the two to each other and
// to docs/openapi.json.
type (
	// CardObject is a saved card as the API and the card.created event
	// show it. It never has the cardholder name (which is not stored).
	CardObject = render.CardObject
	// IntentObject is a payment intent as the API and its events show it.
	IntentObject = render.IntentObject
	// VoidedChargeObject is a charge the provider made that the service
	// voided (status voided, with voided_at) or is voiding while the
	// money is still charged (status charged, voided_at null): see
	// keelpay.VoidedCharge.
	VoidedChargeObject = render.VoidedChargeObject
)
