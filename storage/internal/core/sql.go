package core

import (
	"cmp"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
)

// Standard fills the queries of s that are the same SQL in every database,
// derived from the column lists, and then calls Init. An adapter sets the
// others, and any it writes its own way, before.
func (s *SQL) Standard(d Dialect) error {
	set := func(q *string, text string) {
		if *q == "" {
			*q = text
		}
	}
	set(&s.IntentSelect, IntentColumns)

	set(&s.CardSessionInsert, cardSessionTable.insert("card_sessions"))
	set(&s.CardSessionGet, `SELECT `+CardSessionColumns+` FROM card_sessions WHERE store_id = @store_id AND id = @id`)
	set(&s.CardSessionComplete, `UPDATE card_sessions SET status = @status, card_id = @card_id
		WHERE store_id = @store_id AND id = @id AND status = @expected_status AND expires_at > @now`)
	set(&s.CardSessionExists, `SELECT 1 FROM card_sessions WHERE store_id = @store_id AND id = @id`)
	set(&s.CardSessionExpireDue, `UPDATE card_sessions SET status = @status WHERE status = @expected_status AND expires_at <= @now`)
	set(&s.CardSessionPurgeDue, `SELECT 1 FROM card_sessions WHERE status <> 'completed' AND expires_at < @before LIMIT 1`)

	set(&s.CardInsert, cardTable.insert("cards"))
	set(&s.CardGet, `SELECT `+CardColumns+` FROM cards WHERE store_id = @store_id AND id = @id`)
	set(&s.CardUpdateStatus, `UPDATE cards SET status = @status WHERE store_id = @store_id AND id = @id`)
	set(&s.CardList, `SELECT `+CardColumns+` FROM cards`)
	set(&s.CardExists, `SELECT 1 FROM cards WHERE store_id = @store_id AND customer_id = @customer_id AND id = @id`)
	set(&s.CardDelete, `DELETE FROM cards WHERE store_id = @store_id AND id = @id`)
	set(&s.IntentErase, `UPDATE payment_intents SET customer_name = '', customer_email = '', customer_phone = '',
		billing_country = '', billing_state = '', billing_postal_code = '', version = version + 1
		WHERE store_id = @store_id AND customer_id = @customer_id`)
	set(&s.CardSessionErase, `UPDATE card_sessions SET customer_name = '', customer_email = '', customer_phone = '',
		status = CASE WHEN status = 'open' THEN 'expired' ELSE status END
		WHERE store_id = @store_id AND customer_id = @customer_id`)

	set(&s.IntentInsert, intentTable.insert("payment_intents"))
	set(&s.IntentGet, `SELECT `+s.IntentSelect+` FROM payment_intents WHERE store_id = @store_id AND id = @id`)
	set(&s.CardOfIntent, `SELECT `+CardColumns+` FROM cards WHERE store_id = @store_id AND id = coalesce(nullif(@card_id, ''),
		(SELECT card_id FROM payment_intents WHERE store_id = @store_id AND id = @intent_id))`)
	// A first attempt: the conditions of storage.AttemptStart, and the
	// card the intent was created with (an intent's card and payment
	// method are set together at its creation and by attempts only).
	set(&s.IntentStartAttempt, `UPDATE payment_intents SET status = 'processing', attempt_id = @attempt_id,
			attempt_at = @now, merchant_id = @merchant_id, reconcile_at = @reconcile_at, updated_at = @now,
			version = version + 1
		WHERE store_id = @store_id AND id = @id AND version = @expected_version
			AND status = 'requires_payment_method' AND expires_at > @now
			AND attempt_id = '' AND merchant_id = '' AND attempt_at = @never AND reconcile_at = @never
			AND reconcile_count = 0 AND last_error_code = '' AND next_action_type = ''
			AND card_id <> '' AND (@card_id = '' OR card_id = @card_id)
			AND EXISTS (SELECT 1 FROM cards c WHERE c.store_id = payment_intents.store_id
				AND c.id = payment_intents.card_id AND c.customer_id = payment_intents.customer_id AND c.status = 'active')`)
	set(&s.IntentGetByAttempt, `SELECT `+s.IntentSelect+` FROM payment_intents WHERE attempt_id = @attempt_id`)
	s.intentUpdate, _ = intentTable.update("payment_intents")
	set(&s.IntentExists, `SELECT 1 FROM payment_intents WHERE id = @id AND store_id = @store_id`)
	set(&s.IntentList, `SELECT `+s.IntentSelect+` FROM payment_intents`)
	set(&s.IntentSeq, `SELECT created_at, seq FROM payment_intents WHERE store_id = @store_id AND id = @id`)
	set(&s.IntentListExpireDue, `SELECT `+s.IntentSelect+` FROM payment_intents
		WHERE status = 'requires_payment_method' AND expires_at <= @now ORDER BY expires_at, seq LIMIT @limit`)

	set(&s.AttemptCheckInsert, attemptCheckTable.insert("attempt_checks")+` ON CONFLICT (attempt_id) DO NOTHING`)
	set(&s.AttemptCheckListDue, `SELECT `+AttemptCheckColumns+` FROM attempt_checks
		WHERE check_at <= @now ORDER BY check_at, attempt_id LIMIT @limit`)
	set(&s.AttemptCheckGet, `SELECT `+AttemptCheckColumns+` FROM attempt_checks WHERE attempt_id = @attempt_id`)
	set(&s.AttemptCheckReschedule, `UPDATE attempt_checks SET check_at = @check_at, checks = @checks WHERE attempt_id = @attempt_id`)
	set(&s.AttemptCheckDelete, `DELETE FROM attempt_checks WHERE attempt_id = @attempt_id`)

	set(&s.RefundInsert, refundTable.insert("refunds"))
	set(&s.RefundGet, `SELECT `+RefundColumns+` FROM refunds WHERE store_id = @store_id AND id = @id`)
	set(&s.RefundGetByIntent, `SELECT `+RefundColumns+` FROM refunds WHERE store_id = @store_id AND payment_intent_id = @payment_intent_id`)
	set(&s.RefundGetByAttempt, `SELECT `+RefundColumns+` FROM refunds WHERE attempt_id = @attempt_id`)
	refundUpdate, _ := refundTable.update("refunds")
	set(&s.RefundUpdate, refundUpdate)
	set(&s.RefundExistsForUpdate, `SELECT 1 FROM refunds WHERE store_id = @store_id AND id = @id`)
	set(&s.RefundDelete, `DELETE FROM refunds WHERE store_id = @store_id AND id = @id AND version = @expected_version`)
	set(&s.RefundList, `SELECT `+RefundColumns+` FROM refunds`)
	set(&s.RefundSeq, `SELECT created_at, seq FROM refunds WHERE store_id = @store_id AND id = @id`)
	set(&s.RefundExists, `SELECT 1 FROM refunds WHERE store_id = @store_id AND id = @id`)

	set(&s.StoreInsert, `INSERT INTO stores (`+StoreColumns+`, client_secret) VALUES (`+valuesOf(storeTable.names())+`, '')`)
	set(&s.StoreGet, `SELECT `+StoreColumns+` FROM stores`)
	storeUpdate, _ := storeTable.update("stores")
	set(&s.StoreUpdate, storeUpdate)
	set(&s.StoreExists, `SELECT 1 FROM stores WHERE id = @id`)

	set(&s.EventGet, `SELECT `+EventColumns+` FROM events e JOIN deliveries d ON d.event_id = e.id
		WHERE e.store_id = @store_id AND e.id = @id`)
	set(&s.EventSeq, `SELECT seq FROM events WHERE store_id = @store_id AND id = @id`)
	set(&s.DeliveryAttemptList, `SELECT `+DeliveryAttemptColumns+` FROM delivery_attempts`)
	set(&s.DeliveryAttemptSeq, `SELECT seq FROM delivery_attempts WHERE store_id = @store_id AND event_id = @event_id AND id = @id`)

	set(&s.IdempotencyGet, `SELECT `+IdempotencyColumns+` FROM idempotency_keys WHERE store_id = @store_id AND key = @key`)
	set(&s.IdempotencyCompleted, `SELECT 1 FROM idempotency_keys
		WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status > 0`)
	set(&s.IdempotencyProgress, `UPDATE idempotency_keys SET recovery_point = @recovery_point, object_id = @object_id
		WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status = 0`)
	set(&s.IdempotencyBegin, `INSERT INTO idempotency_keys AS k
			(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at)
		VALUES (@store_id, @key, @fingerprint, @lock_token, @locked_until, 0, @body, @now, @expires_at)
		ON CONFLICT (store_id, key) DO UPDATE SET
			fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
			locked_until = excluded.locked_until, status = 0, body = excluded.body,
			recovery_point = CASE WHEN k.expires_at <= @now THEN '' ELSE k.recovery_point END,
			object_id = CASE WHEN k.expires_at <= @now THEN '' ELSE k.object_id END,
			created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE k.expires_at <= @now
			OR (k.status = 0 AND k.locked_until <= @now AND k.fingerprint = excluded.fingerprint)`)
	set(&s.IdempotencyRelease, `DELETE FROM idempotency_keys
		WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status = 0 AND recovery_point = ''`)
	set(&s.IdempotencyUnlock, `UPDATE idempotency_keys SET locked_until = @never
		WHERE store_id = @store_id AND key = @key AND lock_token = @lock_token AND status = 0`)
	// A record is taken over only when it expired, or when its run was
	// abandoned under the same request before it committed a step; a
	// record this run holds takes the step (a later change of the run).
	set(&s.IdempotencyTake, `INSERT INTO idempotency_keys AS k
			(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at, recovery_point, object_id)
		VALUES (@store_id, @key, @fingerprint, @lock_token, @locked_until, @status, @body, @now, @expires_at, @recovery_point, @object_id)
		ON CONFLICT (store_id, key) DO UPDATE SET
			fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
			locked_until = excluded.locked_until, status = excluded.status, body = excluded.body,
			recovery_point = excluded.recovery_point, object_id = excluded.object_id,
			created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE k.expires_at <= @now
			OR (k.status = 0 AND k.locked_until <= @now AND k.fingerprint = excluded.fingerprint AND k.recovery_point = '')
			OR (k.status = 0 AND k.lock_token = excluded.lock_token)`)
	set(&s.IdempotencyExpiredDue, `SELECT 1 FROM idempotency_keys WHERE expires_at <= @now LIMIT 1`)
	return s.Init(d)
}

// Migration is one of the numbered SQL files of an adapter's schema.
type Migration struct {
	Version int
	Name    string // the file's path in its file system
	Body    string
}

// Migrations reads the migrations in fsys, migration/NNN_name.sql, in
// the order of their numbers.
func Migrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migration/*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		base := name[len("migration/"):]
		n := 0
		for n < len(base) && base[n] >= '0' && base[n] <= '9' {
			n++
		}
		version, err := strconv.Atoi(base[:n])
		if err != nil || n == len(base) || base[n] != '_' {
			return nil, fmt.Errorf("migration %s: bad number", name)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: version, Name: name, Body: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	return out, nil
}
