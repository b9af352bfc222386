package storage

// IdempotencyQueries keeps the responses of requests made with an
// Idempotency-Key.
type IdempotencyQueries interface{}
