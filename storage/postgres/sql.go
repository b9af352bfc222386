package postgres

import (
	"github.com/keelpay/keelpay/storage/internal/core"
)

// The SQL of the queries the core runs (see core.SQL for their
// parameters): PostgreSQL's own, and the standard ones.
var sqlText = func() *core.SQL {
	s := &core.SQL{
		CardSessionPurge: cardSessionPurge,
		IntentListReconcileDue: `SELECT ` + core.IntentColumns + ` FROM payment_intents
			WHERE status IN ('processing', 'requires_action') AND reconcile_at <> '-infinity' AND reconcile_at <= $1
			ORDER BY reconcile_at, seq LIMIT $2`,
		// The counts are kept by triggers (status_counts), in a slot per
		// connection; the unknown outcomes are among the processing
		// intents, which the status index bounds.
		IntentStatusCounts: `SELECT status, sum(n)::bigint FROM status_counts WHERE kind = 'payment_intent' GROUP BY status`,
		IntentOutcomeUnknown: `SELECT count(*) FROM payment_intents
			WHERE status = 'processing' AND last_error_code = 'outcome_unknown'`,
		RefundUpdate: `UPDATE refunds SET amount = $1, currency = $2, reason = $3, metadata = $4,
			status = $5, attempts = $6, attempt_id = $7, last_sent_at = $8, last_error = $9, reconcile_at = $10,
			reconcile_count = $11, succeeded_at = $12, updated_at = $13, version = $14::bigint + 1
			WHERE store_id = $15 AND id = $16 AND version = $14`,
		RefundListReconcileDue: `SELECT ` + core.RefundColumns + ` FROM refunds
			WHERE status = 'pending' AND reconcile_at <> '-infinity' AND reconcile_at <= $1
			ORDER BY reconcile_at, seq LIMIT $2`,
		StoreUpdate: `UPDATE stores SET client_id = $1, client_secret_hash = $2, merchant_id = $3,
			currency = $4, publishable_key = $5, secret_key_hash = $6, webhook_url = $7, webhook_secret = $8,
			version = $9::bigint + 1, updated_at = $10 WHERE id = $11 AND version = $9`,
		// One statement: the event and its delivery.
		EventInsert: []string{`WITH e AS (
				INSERT INTO events (id, store_id, type, body, created_at) VALUES ($1, $2, $3, $4, $5)
				RETURNING id, store_id, created_at)
			INSERT INTO deliveries (event_id, store_id, status, next_attempt_at)
			SELECT id, store_id, 'pending', created_at FROM e`},
		// One statement: the delivery made pending, returning its event.
		DeliveryRedeliverGet: `UPDATE deliveries d SET status = 'pending', attempts = 0,
				next_attempt_at = $1, lease_token = '', lease_until = '-infinity'
			FROM events e WHERE e.id = d.event_id AND d.event_id = $2 AND d.store_id = $3
			RETURNING ` + core.EventColumns,
		DeliveryClaimDueJobs: claimDueQuery,
		ClaimCaps:            claimCaps,
		// A delivery that another transaction holds is being claimed or
		// recorded: as good as leased.
		DeliveryClaimEventJob: `WITH c AS (
				SELECT event_id FROM deliveries
				WHERE event_id = $3 AND status = 'pending' AND lease_until <= $4
				FOR UPDATE SKIP LOCKED
			)
			UPDATE deliveries d SET lease_token = $1, lease_until = $2
			FROM c, events e, stores s
			WHERE d.event_id = c.event_id AND e.id = d.event_id AND s.id = d.store_id
			RETURNING ` + core.JobColumns,
		DeliveryNextDue: `SELECT next_attempt_at, lease_until FROM deliveries
			WHERE status = 'pending' ORDER BY next_attempt_at, event_id LIMIT 1`,
		// Kept by triggers as deliveries change (status_counts).
		DeliveryCounts: `SELECT coalesce(sum(n) FILTER (WHERE status = 'pending'), 0)::bigint,
			coalesce(sum(n) FILTER (WHERE status = 'failed'), 0)::bigint FROM status_counts WHERE kind = 'delivery'`,
		IdempotencyComplete: `UPDATE idempotency_keys SET status = $1, body = $2, locked_until = '-infinity'
			WHERE store_id = $3 AND key = $4 AND lock_token = $5 AND status = 0`,
		IdempotencyProgressDone: `UPDATE idempotency_keys
			SET recovery_point = $1, object_id = $2, status = $3, body = $4, locked_until = '-infinity'
			WHERE store_id = $5 AND key = $6 AND lock_token = $7 AND status = 0`,
		// Rows another transaction holds (a key being taken over) are
		// left for the next call.
		IdempotencyDeleteExpired: `DELETE FROM idempotency_keys k USING (
				SELECT store_id, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED) x
			WHERE k.store_id = x.store_id AND k.key = x.key`,
		RateLimitDeleteExpired: `DELETE FROM rate_limit_hits WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM rate_limit_hits WHERE expires_at <= $1 LIMIT $2))`,
	}
	s.Standard(dialect{})
	return s
}()
