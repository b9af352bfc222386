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
			WHERE status IN ('processing', 'requires_action') AND reconcile_at <> '-infinity' AND reconcile_at <= @now
			ORDER BY reconcile_at, seq LIMIT @limit`,
		// The counts are kept by triggers (status_counts), in a slot per
		// connection; the unknown outcomes have an index of their own
		// (payment_intents_outcome_unknown).
		IntentStatusCounts: `SELECT status, sum(n)::bigint FROM status_counts WHERE kind = 'payment_intent' GROUP BY status`,
		IntentOutcomeUnknown: `SELECT count(*) FROM payment_intents
			WHERE status = 'processing' AND last_error_code = 'outcome_unknown'`,
		RefundListReconcileDue: `SELECT ` + core.RefundColumns + ` FROM refunds
			WHERE status = 'pending' AND reconcile_at <> '-infinity' AND reconcile_at <= @now
			ORDER BY reconcile_at, seq LIMIT @limit`,
		// One statement: the event and its delivery.
		EventInsert: []string{`WITH e AS (
				INSERT INTO events (id, store_id, type, body, created_at) VALUES (@id, @store_id, @type, @body, @created_at)
				RETURNING id, store_id, created_at)
			INSERT INTO deliveries (event_id, store_id, status, next_attempt_at)
			SELECT id, store_id, 'pending', created_at FROM e`},
		// One statement: the delivery made pending, returning its event.
		DeliveryRedeliverGet: `UPDATE deliveries d SET status = 'pending', attempts = 0,
				next_attempt_at = @now, lease_token = '', lease_until = '-infinity'
			FROM events e WHERE e.id = d.event_id AND d.event_id = @event_id AND d.store_id = @store_id
			RETURNING ` + core.EventColumns,
		DeliveryClaimDueJobs: claimDueQuery,
		ClaimCaps:            claimCaps,
		// A delivery that another transaction holds is being claimed or
		// recorded: as good as leased.
		DeliveryClaimEventJob: `WITH c AS (
				SELECT event_id FROM deliveries
				WHERE event_id = @event_id AND status = 'pending' AND lease_until <= @now
				FOR UPDATE SKIP LOCKED
			)
			UPDATE deliveries d SET lease_token = @lease_token, lease_until = @lease_until
			FROM c, events e, stores s
			WHERE d.event_id = c.event_id AND e.id = d.event_id AND s.id = d.store_id
			RETURNING ` + core.JobColumns,
		DeliveryNextDue: `SELECT next_attempt_at, lease_until FROM deliveries
			WHERE status = 'pending' ORDER BY next_attempt_at, event_id LIMIT 1`,
		// Counted from the table, through the partial indexes of pending
		// (deliveries_due) and failed (deliveries_failed) deliveries: a
		// trigger on every delivery's insert and status change cost each
		// payment more than a scrape's count costs.
		DeliveryCounts: `SELECT (SELECT count(*) FROM deliveries WHERE status = 'pending'),
			(SELECT count(*) FROM deliveries WHERE status = 'failed')`,
		IdempotencyComplete: `UPDATE idempotency_keys SET status = @status, body = @body, locked_until = '-infinity'
			WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status = 0`,
		IdempotencyProgressDone: `UPDATE idempotency_keys
			SET recovery_point = @recovery_point, object_id = @object_id, status = @status, body = @body, locked_until = '-infinity'
			WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status = 0`,
		// Rows another transaction holds (a key being taken over) are
		// left for the next call.
		IdempotencyDeleteExpired: `DELETE FROM idempotency_keys k USING (
				SELECT store_id, key FROM idempotency_keys WHERE expires_at <= @now LIMIT @limit FOR UPDATE SKIP LOCKED) x
			WHERE k.store_id = x.store_id AND k.key = x.key`,
		RateLimitDeleteExpired: `DELETE FROM rate_limit_hits WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM rate_limit_hits WHERE expires_at <= @now LIMIT @limit))`,
	}
	if err := s.Standard(dialect{}); err != nil {
		panic(err)
	}
	return s
}()
