package stripe

import "context"

// KeyUsed is keyUsed with a client of key, for the tests that check the
// probe against Stripe itself.
func (p *Provider) KeyUsed(ctx context.Context, key, idempotencyKey string, refund bool) (bool, error) {
	return keyUsed(ctx, p.clientFor(key), idempotencyKey, refund)
}
