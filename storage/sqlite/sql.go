package sqlite

import (
	"github.com/keelpay/keelpay/storage/internal/core"
)

// The SQL of the queries the core runs (see core.SQL for their
// parameters): SQLite's own, and the standard ones.
var sqlText = func() *core.SQL {
	s := &core.SQL{
		// A payment intent is read as one value (see jsonRow), named:
		// the driver reads the name of the column at every query, and an
		// expression's name is its whole text.
		IntentSelect: `json_array(` + core.IntentColumns + `) AS intent`,
		// So is a card, read twice in each payment (its create and its
		// confirm): one name for the driver to fetch at every read, not
		// one per column.
		CardGet: jsonSelect + core.CardColumns + `) AS card FROM cards WHERE store_id = @store_id AND id = @id`,
		CardOfIntent: jsonSelect + core.CardColumns + `) AS card FROM cards WHERE store_id = @store_id AND id = coalesce(nullif(@card_id, ''),
			(SELECT card_id FROM payment_intents WHERE store_id = @store_id AND id = @intent_id))`,
		CardSessionPurge: cardSessionPurgeQuery,
		IntentListReconcileDue: jsonSelect + core.IntentColumns + `) FROM payment_intents
			WHERE status IN ('processing', 'requires_action') AND reconcile_at <> 0 AND reconcile_at <= @now
			ORDER BY reconcile_at, seq LIMIT @limit`,
		// The counts are kept by triggers (status_counts); the unknown
		// outcomes have an index of their own.
		IntentStatusCounts: `SELECT status, n FROM status_counts WHERE kind = 'payment_intent'`,
		IntentOutcomeUnknown: `SELECT count(*) FROM payment_intents INDEXED BY payment_intents_outcome_unknown
			WHERE status = 'processing' AND last_error_code = 'outcome_unknown'`,
		ListIndex: listIndex,
		RefundListReconcileDue: `SELECT ` + core.RefundColumns + ` FROM refunds
			WHERE status = 'pending' AND reconcile_at > 0 AND reconcile_at <= @now
			ORDER BY reconcile_at, seq LIMIT @limit`,
		// No data-modifying WITH: the event, then its delivery.
		EventInsert: []string{
			`INSERT INTO events (id, store_id, type, body, created_at) VALUES (@id, @store_id, @type, @body, @created_at)`,
			`INSERT INTO deliveries (event_id, store_id, status, next_attempt_at) VALUES (@id, @store_id, 'pending', @created_at)`,
		},
		DeliveryRedeliver: `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = @now,
			lease_token = '', lease_until = 0 WHERE event_id = @event_id AND store_id = @store_id`,
		DeliveryRedeliverGet: `SELECT ` + core.EventColumns + `
			FROM events e JOIN deliveries d ON d.event_id = e.id WHERE e.id = @event_id`,
		DeliveryClaimDue: claimDueQuery,
		DeliveryClaimDueJobs: `SELECT ` + core.JobColumns + `, d.next_attempt_at
			FROM deliveries d INDEXED BY deliveries_leased JOIN events e ON e.id = d.event_id JOIN stores s ON s.id = d.store_id
			WHERE d.lease_token = @lease_token AND d.lease_token <> '' ORDER BY d.next_attempt_at, d.event_id`,
		ClaimCaps: storeCaps,
		DeliveryClaimEvent: `UPDATE deliveries SET lease_token = @lease_token, lease_until = @lease_until
			WHERE event_id = @event_id AND status = 'pending' AND lease_until <= @now`,
		DeliveryClaimEventJob: `SELECT ` + core.JobColumns + `
			FROM deliveries d JOIN events e ON e.id = d.event_id JOIN stores s ON s.id = d.store_id
			WHERE d.event_id = @event_id AND d.lease_token = @lease_token`,
		DeliveryNextDue: `SELECT next_attempt_at, lease_until FROM deliveries INDEXED BY deliveries_due
			WHERE status = 'pending' ORDER BY next_attempt_at, event_id LIMIT 1`,
		DeliveryCounts: `SELECT coalesce(sum(n) FILTER (WHERE status = 'pending'), 0),
			coalesce(sum(n) FILTER (WHERE status = 'failed'), 0) FROM status_counts WHERE kind = 'delivery'`,
		IdempotencyComplete: `UPDATE idempotency_keys SET status = @status, body = @body, locked_until = 0
			WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status = 0`,
		IdempotencyProgressDone: `UPDATE idempotency_keys
			SET recovery_point = @recovery_point, object_id = @object_id, status = @status, body = @body, locked_until = 0
			WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status = 0`,
		IdempotencyDeleteExpired: `DELETE FROM idempotency_keys WHERE rowid IN (
			SELECT rowid FROM idempotency_keys WHERE expires_at <= @now LIMIT @limit)`,
		RateLimitDeleteExpired: `DELETE FROM rate_limit_hits WHERE rowid IN (
			SELECT rowid FROM rate_limit_hits WHERE expires_at <= @now LIMIT @limit)`,
	}
	if err := s.Standard(dialect{}); err != nil {
		panic(err)
	}
	return s
}()

// listIndex names the index of migration 013 that a filtered list walks:
// without statistics (no ANALYZE) SQLite takes a creation-time range and
// a cursor on (store_id, created_at, seq) over an equality on another
// index, and would walk every intent of the store in the range.
func listIndex(table, column string) string {
	switch table + "." + column {
	case "payment_intents.created_at":
		return " INDEXED BY payment_intents_store_created"
	case "payment_intents.customer_id":
		return " INDEXED BY payment_intents_store_customer"
	case "payment_intents.status":
		return " INDEXED BY payment_intents_store_status"
	case "payment_intents.reference":
		return " INDEXED BY payment_intents_store_reference"
	case "refunds.created_at":
		return " INDEXED BY refunds_store_created"
	case "refunds.status":
		return " INDEXED BY refunds_store_status"
	}
	return "" // refunds.payment_intent_id: its unique index, one row
}
