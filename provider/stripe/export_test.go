package stripe

import "context"

// KeyUsed is keyUsed with a client of key, for the tests that check the
// probe against Stripe itself.
func (p *Provider) KeyUsed(ctx context.Context, key, idempotencyKey string, refund bool) (bool, error) {
	return keyUsed(ctx, p.clientFor(key), idempotencyKey, refund)
}

// MetadataKeys are every metadata key the adapter can write for attemptID.
func MetadataKeys(attemptID string) []string {
	return []string{MetaAttempt, MetaMerchant, MetaVoidOf, RefundMarkKey(attemptID)}
}

// PutHint and HintCount reach the hints.
func PutHint(p *Provider, merchantID, attemptID, piID string) {
	p.hintCharge(merchantID, attemptID, piID)
}

func HintCount(p *Provider) int { return p.hints.len() }
