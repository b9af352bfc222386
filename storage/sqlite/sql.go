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
		// So is a card: read twice in each payment (its create and its
		// confirm), its eleven columns were eleven names the driver
		// fetched at every read.
		CardGet: jsonSelect + core.CardColumns + `) AS card FROM cards WHERE store_id = ?1 AND id = ?2`,
		CardOfIntent: jsonSelect + core.CardColumns + `) AS card FROM cards WHERE store_id = ?1 AND id = coalesce(nullif(?3, ''),
			(SELECT card_id FROM payment_intents WHERE store_id = ?1 AND id = ?2))`,
		CardSessionPurge: cardSessionPurgeQuery,
		EventSeq:         eventSeqQuery,
		IntentListReconcileDue: jsonSelect + core.IntentColumns + `) FROM payment_intents
			WHERE status IN ('processing', 'requires_action') AND reconcile_at <> 0 AND reconcile_at <= ?1
			ORDER BY reconcile_at, seq LIMIT ?2`,
		// The counts are kept by triggers (status_counts); the unknown
		// outcomes are among the processing intents, which the status
		// index bounds.
		IntentStatusCounts: `SELECT status, n FROM status_counts WHERE kind = 'payment_intent'`,
		IntentOutcomeUnknown: `SELECT count(*) FROM payment_intents INDEXED BY payment_intents_status
			WHERE status = 'processing' AND last_error_code = 'outcome_unknown'`,
		RefundUpdate: `UPDATE refunds SET amount = ?1, currency = ?2, reason = ?3, metadata = ?4,
			status = ?5, attempts = ?6, attempt_id = ?7, last_sent_at = ?8, last_error = ?9, reconcile_at = ?10,
			reconcile_count = ?11, succeeded_at = ?12, updated_at = ?13, version = ?14 + 1
			WHERE store_id = ?15 AND id = ?16 AND version = ?14`,
		ListIndex: listIndex,
		RefundListReconcileDue: `SELECT ` + core.RefundColumns + ` FROM refunds
			WHERE status = 'pending' AND reconcile_at > 0 AND reconcile_at <= ?1
			ORDER BY reconcile_at, seq LIMIT ?2`,
		StoreUpdate: `UPDATE stores SET client_id = ?1, client_secret_hash = ?2, merchant_id = ?3,
			currency = ?4, publishable_key = ?5, secret_key_hash = ?6, webhook_url = ?7, webhook_secret = ?8,
			version = ?9 + 1, updated_at = ?10 WHERE id = ?11 AND version = ?9`,
		// No data-modifying WITH: the event, then its delivery.
		EventInsert: []string{
			`INSERT INTO events (id, store_id, type, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)`,
			`INSERT INTO deliveries (event_id, store_id, status, next_attempt_at) VALUES (?1, ?2, 'pending', ?5)`,
		},
		DeliveryRedeliver: `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?1,
			lease_token = '', lease_until = 0 WHERE event_id = ?2 AND store_id = ?3`,
		DeliveryRedeliverGet: `SELECT ` + core.EventColumns + `
			FROM events e JOIN deliveries d ON d.event_id = e.id WHERE e.id = ?2`,
		DeliveryClaimDue: claimDueQuery,
		DeliveryClaimDueJobs: `SELECT ` + core.JobColumns + `, d.next_attempt_at
			FROM deliveries d INDEXED BY deliveries_leased JOIN events e ON e.id = d.event_id JOIN stores s ON s.id = d.store_id
			WHERE d.lease_token = ?1 AND d.lease_token <> '' ORDER BY d.next_attempt_at, d.event_id`,
		ClaimCaps: storeCaps,
		DeliveryClaimEvent: `UPDATE deliveries SET lease_token = ?1, lease_until = ?2
			WHERE event_id = ?3 AND status = 'pending' AND lease_until <= ?4`,
		DeliveryClaimEventJob: `SELECT ` + core.JobColumns + `
			FROM deliveries d JOIN events e ON e.id = d.event_id JOIN stores s ON s.id = d.store_id
			WHERE d.event_id = ?3 AND d.lease_token = ?1`,
		DeliveryNextDue: `SELECT next_attempt_at, lease_until FROM deliveries INDEXED BY deliveries_due
			WHERE status = 'pending' ORDER BY next_attempt_at, event_id LIMIT 1`,
		DeliveryCounts: `SELECT coalesce(sum(n) FILTER (WHERE status = 'pending'), 0),
			coalesce(sum(n) FILTER (WHERE status = 'failed'), 0) FROM status_counts WHERE kind = 'delivery'`,
		IdempotencyComplete: `UPDATE idempotency_keys SET status = ?1, body = ?2, locked_until = 0
			WHERE store_id = ?3 AND key = ?4 AND lock_token = ?5 AND status = 0`,
		IdempotencyProgressDone: `UPDATE idempotency_keys
			SET recovery_point = ?1, object_id = ?2, status = ?3, body = ?4, locked_until = 0
			WHERE store_id = ?5 AND key = ?6 AND lock_token = ?7 AND status = 0`,
		IdempotencyDeleteExpired: `DELETE FROM idempotency_keys WHERE rowid IN (
			SELECT rowid FROM idempotency_keys WHERE expires_at <= ?1 LIMIT ?2)`,
		RateLimitDeleteExpired: `DELETE FROM rate_limit_hits WHERE rowid IN (
			SELECT rowid FROM rate_limit_hits WHERE expires_at <= ?1 LIMIT ?2)`,
	}
	s.Standard(dialect{})
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
