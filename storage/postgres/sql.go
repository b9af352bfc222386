package postgres

import (
	"github.com/keelpay/keelpay/storage/internal/core"
)

// The SQL of the queries the core runs (see core.SQL for their
// parameters).
var sqlText = func() *core.SQL {
	d := dialect{}
	s := &core.SQL{
		CardSessionInsert: `INSERT INTO card_sessions (` + core.CardSessionColumns + `) VALUES (` + core.Placeholders(d, 12) + `)`,
		CardSessionGet: `SELECT ` + core.CardSessionColumns + `
			FROM card_sessions WHERE store_id = $1 AND id = $2`,
		CardSessionComplete: `UPDATE card_sessions SET status = $1, card_id = $2
			WHERE store_id = $3 AND id = $4 AND status = $5 AND expires_at > $6`,
		CardSessionExists:    `SELECT FROM card_sessions WHERE store_id = $3 AND id = $4`,
		CardSessionExpireDue: `UPDATE card_sessions SET status = $1 WHERE status = $2 AND expires_at <= $3`,
		CardSessionPurge:     cardSessionPurge,
		CardSessionPurgeDue:  `SELECT 1 FROM card_sessions WHERE status <> 'completed' AND expires_at < $1 LIMIT 1`,

		CardInsert:       `INSERT INTO cards (` + core.CardColumns + `) VALUES (` + core.Placeholders(d, 11) + `)`,
		CardGet:          `SELECT ` + core.CardColumns + ` FROM cards WHERE store_id = $1 AND id = $2`,
		CardUpdateStatus: `UPDATE cards SET status = $1 WHERE store_id = $2 AND id = $3`,

		IntentInsert:       `INSERT INTO payment_intents (` + core.IntentColumns + `) VALUES (` + core.Placeholders(d, 43) + `)`,
		IntentGet:          `SELECT ` + core.IntentColumns + ` FROM payment_intents WHERE store_id = $1 AND id = $2`,
		IntentGetByAttempt: `SELECT ` + core.IntentColumns + ` FROM payment_intents WHERE attempt_id = $1`,
		IntentExists:       `SELECT FROM payment_intents WHERE id = $1 AND store_id = $2`,
		IntentList:         `SELECT ` + core.IntentColumns + ` FROM payment_intents`,
		IntentSeq:          `SELECT seq FROM payment_intents WHERE store_id = $1 AND id = $2`,
		IntentListReconcileDue: `SELECT ` + core.IntentColumns + ` FROM payment_intents
			WHERE status IN ('processing', 'requires_action') AND reconcile_at <> '-infinity' AND reconcile_at <= $1
			ORDER BY reconcile_at, seq LIMIT $2`,
		IntentListExpireDue: `SELECT ` + core.IntentColumns + ` FROM payment_intents
			WHERE status = 'requires_payment_method' AND expires_at <= $1 ORDER BY expires_at, seq LIMIT $2`,
		// The counts are kept by triggers (status_counts), in a slot per
		// connection; the unknown outcomes are among the processing
		// intents, which the status index bounds.
		IntentStatusCounts: `SELECT status, sum(n)::bigint FROM status_counts WHERE kind = 'payment_intent' GROUP BY status`,
		IntentOutcomeUnknown: `SELECT count(*) FROM payment_intents
			WHERE status = 'processing' AND last_error_code = 'outcome_unknown'`,

		AttemptCheckInsert: `INSERT INTO attempt_checks (` + core.AttemptCheckColumns + `)
			VALUES (` + core.Placeholders(d, 8) + `) ON CONFLICT (attempt_id) DO NOTHING`,
		AttemptCheckListDue: `SELECT ` + core.AttemptCheckColumns + ` FROM attempt_checks
			WHERE check_at <= $1 ORDER BY check_at, attempt_id LIMIT $2`,
		AttemptCheckReschedule: `UPDATE attempt_checks SET check_at = $2, checks = $3 WHERE attempt_id = $1`,
		AttemptCheckDelete:     `DELETE FROM attempt_checks WHERE attempt_id = $1`,

		RefundInsert: `INSERT INTO refunds (` + core.RefundColumns + `) VALUES (` + core.Placeholders(d, 18) + `)`,
		RefundGet:    `SELECT ` + core.RefundColumns + ` FROM refunds WHERE store_id = $1 AND id = $2`,
		RefundGetByIntent: `SELECT ` + core.RefundColumns + ` FROM refunds
			WHERE store_id = $1 AND payment_intent_id = $2`,
		RefundUpdate: `UPDATE refunds SET amount = $1, currency = $2, reason = $3, metadata = $4,
			status = $5, attempts = $6, attempt_id = $7, last_sent_at = $8, last_error = $9, reconcile_at = $10,
			reconcile_count = $11, succeeded_at = $12, updated_at = $13, version = $14::bigint + 1
			WHERE store_id = $15 AND id = $16 AND version = $14`,
		RefundExistsForUpdate: `SELECT FROM refunds WHERE store_id = $15 AND id = $16`,
		RefundDelete:          `DELETE FROM refunds WHERE store_id = $1 AND id = $2 AND version = $3`,
		RefundExists:          `SELECT FROM refunds WHERE store_id = $1 AND id = $2`,
		RefundListReconcileDue: `SELECT ` + core.RefundColumns + ` FROM refunds
			WHERE status = 'pending' AND reconcile_at <> '-infinity' AND reconcile_at <= $1
			ORDER BY reconcile_at, seq LIMIT $2`,

		StoreInsert: `INSERT INTO stores (` + core.StoreColumns + `, client_secret)
			VALUES (` + core.Placeholders(d, 12) + `, '')`,
		StoreGet: `SELECT ` + core.StoreColumns + ` FROM stores`,
		StoreUpdate: `UPDATE stores SET client_id = $1, client_secret_hash = $2, merchant_id = $3,
			currency = $4, publishable_key = $5, secret_key_hash = $6, webhook_url = $7, webhook_secret = $8,
			version = $9::bigint + 1, updated_at = $10 WHERE id = $11 AND version = $9`,
		StoreExists: `SELECT FROM stores WHERE id = $11`,

		EventGet: `SELECT ` + core.EventColumns + `
			FROM events e JOIN deliveries d ON d.event_id = e.id
			WHERE e.store_id = $1 AND e.id = $2`,
		DeliveryAttemptList: `SELECT ` + core.DeliveryAttemptColumns + ` FROM delivery_attempts`,
		DeliveryAttemptSeq:  `SELECT seq FROM delivery_attempts WHERE store_id = $1 AND event_id = $2 AND id = $3`,
		// Kept by triggers as deliveries change (status_counts).
		DeliveryCounts: `SELECT coalesce(sum(n) FILTER (WHERE status = 'pending'), 0)::bigint,
			coalesce(sum(n) FILTER (WHERE status = 'failed'), 0)::bigint FROM status_counts WHERE kind = 'delivery'`,

		IdempotencyGet: `SELECT ` + core.IdempotencyColumns + `
			FROM idempotency_keys WHERE store_id = $1 AND key = $2`,
		IdempotencyProgress: `UPDATE idempotency_keys SET recovery_point = $1, object_id = $2
			WHERE store_id = $3 AND key = $4 AND lock_token = $5 AND status = 0`,
		IdempotencyProgressDone: `UPDATE idempotency_keys
			SET recovery_point = $1, object_id = $2, status = $3, body = $4, locked_until = '-infinity'
			WHERE store_id = $5 AND key = $6 AND lock_token = $7 AND status = 0`,
		IdempotencyTake: `INSERT INTO idempotency_keys AS k
				(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at, recovery_point, object_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (store_id, key) DO UPDATE SET
				fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
				locked_until = excluded.locked_until, status = excluded.status, body = excluded.body,
				recovery_point = excluded.recovery_point, object_id = excluded.object_id,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE k.expires_at <= $8
				OR (k.status = 0 AND k.locked_until <= $8 AND k.fingerprint = excluded.fingerprint AND k.recovery_point = '')`,
		// Rows another transaction holds (a key being taken over) are
		// left for the next call.
		IdempotencyDeleteExpired: `DELETE FROM idempotency_keys k USING (
				SELECT store_id, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED) x
			WHERE k.store_id = x.store_id AND k.key = x.key`,
		IdempotencyExpiredDue: `SELECT 1 FROM idempotency_keys WHERE expires_at <= $1 LIMIT 1`,

		RateLimitDeleteExpired: `DELETE FROM rate_limit_hits WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM rate_limit_hits WHERE expires_at <= $1 LIMIT $2))`,
	}
	s.Init(d)
	return s
}()
