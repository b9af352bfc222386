package core

import (
	"cmp"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
)

// Standard fills the queries of s that are the same SQL in every database
// but for their placeholders (d's), derived from the column lists, and
// then calls Init. An adapter sets the others, and any it writes its own
// way, before.
func (s *SQL) Standard(d Dialect) {
	p := d.Placeholder
	set := func(q *string, text string) {
		if *q == "" {
			*q = text
		}
	}
	insert := func(table, columns string, n int) string {
		return `INSERT INTO ` + table + ` (` + columns + `) VALUES (` + Placeholders(d, n) + `)`
	}
	set(&s.IntentSelect, IntentColumns)

	set(&s.CardSessionInsert, insert("card_sessions", CardSessionColumns, 12))
	set(&s.CardSessionGet, `SELECT `+CardSessionColumns+` FROM card_sessions WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.CardSessionComplete, `UPDATE card_sessions SET status = `+p(1)+`, card_id = `+p(2)+`
		WHERE store_id = `+p(3)+` AND id = `+p(4)+` AND status = `+p(5)+` AND expires_at > `+p(6))
	set(&s.CardSessionExists, `SELECT 1 FROM card_sessions WHERE store_id = `+p(3)+` AND id = `+p(4))
	set(&s.CardSessionExpireDue, `UPDATE card_sessions SET status = `+p(1)+` WHERE status = `+p(2)+` AND expires_at <= `+p(3))
	set(&s.CardSessionPurgeDue, `SELECT 1 FROM card_sessions WHERE status <> 'completed' AND expires_at < `+p(1)+` LIMIT 1`)

	set(&s.CardInsert, insert("cards", CardColumns, 11))
	set(&s.CardGet, `SELECT `+CardColumns+` FROM cards WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.CardUpdateStatus, `UPDATE cards SET status = `+p(1)+` WHERE store_id = `+p(2)+` AND id = `+p(3))
	set(&s.CardList, `SELECT `+CardColumns+` FROM cards`)
	set(&s.CardExists, `SELECT 1 FROM cards WHERE store_id = `+p(1)+` AND customer_id = `+p(2)+` AND id = `+p(3))
	set(&s.CardDelete, `DELETE FROM cards WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.IntentErase, `UPDATE payment_intents SET customer_name = '', customer_email = '', customer_phone = '',
		billing_country = '', billing_state = '', billing_postal_code = '', version = version + 1
		WHERE store_id = `+p(1)+` AND customer_id = `+p(2))
	set(&s.CardSessionErase, `UPDATE card_sessions SET customer_name = '', customer_email = '', customer_phone = '',
		status = CASE WHEN status = 'open' THEN 'expired' ELSE status END
		WHERE store_id = `+p(1)+` AND customer_id = `+p(2))

	set(&s.IntentInsert, insert("payment_intents", IntentColumns, intentColumnCount))
	set(&s.IntentGet, `SELECT `+s.IntentSelect+` FROM payment_intents WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.CardOfIntent, `SELECT `+CardColumns+` FROM cards WHERE store_id = `+p(1)+` AND id = coalesce(nullif(`+p(3)+`, ''),
		(SELECT card_id FROM payment_intents WHERE store_id = `+p(1)+` AND id = `+p(2)+`))`)
	set(&s.IntentGetByAttempt, `SELECT `+s.IntentSelect+` FROM payment_intents WHERE attempt_id = `+p(1))
	set(&s.IntentExists, `SELECT 1 FROM payment_intents WHERE id = `+p(1)+` AND store_id = `+p(2))
	set(&s.IntentList, `SELECT `+s.IntentSelect+` FROM payment_intents`)
	set(&s.IntentSeq, `SELECT created_at, seq FROM payment_intents WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.IntentListExpireDue, `SELECT `+s.IntentSelect+` FROM payment_intents
		WHERE status = 'requires_payment_method' AND expires_at <= `+p(1)+` ORDER BY expires_at, seq LIMIT `+p(2))

	set(&s.AttemptCheckInsert, insert("attempt_checks", AttemptCheckColumns, 8)+` ON CONFLICT (attempt_id) DO NOTHING`)
	set(&s.AttemptCheckListDue, `SELECT `+AttemptCheckColumns+` FROM attempt_checks
		WHERE check_at <= `+p(1)+` ORDER BY check_at, attempt_id LIMIT `+p(2))
	set(&s.AttemptCheckGet, `SELECT `+AttemptCheckColumns+` FROM attempt_checks WHERE attempt_id = `+p(1))
	set(&s.AttemptCheckReschedule, `UPDATE attempt_checks SET check_at = `+p(2)+`, checks = `+p(3)+` WHERE attempt_id = `+p(1))
	set(&s.AttemptCheckDelete, `DELETE FROM attempt_checks WHERE attempt_id = `+p(1))

	set(&s.RefundInsert, insert("refunds", RefundColumns, 18))
	set(&s.RefundGet, `SELECT `+RefundColumns+` FROM refunds WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.RefundGetByIntent, `SELECT `+RefundColumns+` FROM refunds WHERE store_id = `+p(1)+` AND payment_intent_id = `+p(2))
	set(&s.RefundGetByAttempt, `SELECT `+RefundColumns+` FROM refunds WHERE attempt_id = `+p(1))
	set(&s.RefundExistsForUpdate, `SELECT 1 FROM refunds WHERE store_id = `+p(15)+` AND id = `+p(16))
	set(&s.RefundDelete, `DELETE FROM refunds WHERE store_id = `+p(1)+` AND id = `+p(2)+` AND version = `+p(3))
	set(&s.RefundList, `SELECT `+RefundColumns+` FROM refunds`)
	set(&s.RefundSeq, `SELECT created_at, seq FROM refunds WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.RefundExists, `SELECT 1 FROM refunds WHERE store_id = `+p(1)+` AND id = `+p(2))

	set(&s.StoreInsert, `INSERT INTO stores (`+StoreColumns+`, client_secret) VALUES (`+Placeholders(d, 12)+`, '')`)
	set(&s.StoreGet, `SELECT `+StoreColumns+` FROM stores`)
	set(&s.StoreExists, `SELECT 1 FROM stores WHERE id = `+p(11))

	set(&s.EventGet, `SELECT `+EventColumns+` FROM events e JOIN deliveries d ON d.event_id = e.id
		WHERE e.store_id = `+p(1)+` AND e.id = `+p(2))
	set(&s.EventSeq, `SELECT seq FROM events WHERE store_id = `+p(1)+` AND id = `+p(2))
	set(&s.DeliveryAttemptList, `SELECT `+DeliveryAttemptColumns+` FROM delivery_attempts`)
	set(&s.DeliveryAttemptSeq, `SELECT seq FROM delivery_attempts WHERE store_id = `+p(1)+` AND event_id = `+p(2)+` AND id = `+p(3))

	set(&s.IdempotencyGet, `SELECT `+IdempotencyColumns+` FROM idempotency_keys WHERE store_id = `+p(1)+` AND key = `+p(2))
	set(&s.IdempotencyCompleted, `SELECT 1 FROM idempotency_keys
		WHERE store_id = `+p(3)+` AND key = `+p(4)+` AND lock_token = `+p(5)+` AND status > 0`)
	set(&s.IdempotencyProgress, `UPDATE idempotency_keys SET recovery_point = `+p(1)+`, object_id = `+p(2)+`
		WHERE store_id = `+p(3)+` AND key = `+p(4)+` AND lock_token = `+p(5)+` AND status = 0`)
	set(&s.IdempotencyBegin, `INSERT INTO idempotency_keys AS k
			(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at)
		VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, 0, `+p(8)+`, `+p(6)+`, `+p(7)+`)
		ON CONFLICT (store_id, key) DO UPDATE SET
			fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
			locked_until = excluded.locked_until, status = 0, body = excluded.body,
			recovery_point = CASE WHEN k.expires_at <= `+p(6)+` THEN '' ELSE k.recovery_point END,
			object_id = CASE WHEN k.expires_at <= `+p(6)+` THEN '' ELSE k.object_id END,
			created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE k.expires_at <= `+p(6)+`
			OR (k.status = 0 AND k.locked_until <= `+p(6)+` AND k.fingerprint = excluded.fingerprint)`)
	set(&s.IdempotencyRelease, `DELETE FROM idempotency_keys
		WHERE store_id = `+p(1)+` AND key = `+p(2)+` AND lock_token = `+p(3)+` AND status = 0 AND recovery_point = ''`)
	set(&s.IdempotencyUnlock, `UPDATE idempotency_keys SET locked_until = `+p(4)+`
		WHERE store_id = `+p(1)+` AND key = `+p(2)+` AND lock_token = `+p(3)+` AND status = 0`)
	// A record is taken over only when it expired, or when its run was
	// abandoned under the same request before it committed a step; a
	// record this run holds takes the step (a later change of the run).
	set(&s.IdempotencyTake, `INSERT INTO idempotency_keys AS k
			(store_id, key, fingerprint, lock_token, locked_until, status, body, created_at, expires_at, recovery_point, object_id)
		VALUES (`+Placeholders(d, 11)+`)
		ON CONFLICT (store_id, key) DO UPDATE SET
			fingerprint = excluded.fingerprint, lock_token = excluded.lock_token,
			locked_until = excluded.locked_until, status = excluded.status, body = excluded.body,
			recovery_point = excluded.recovery_point, object_id = excluded.object_id,
			created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE k.expires_at <= `+p(8)+`
			OR (k.status = 0 AND k.locked_until <= `+p(8)+` AND k.fingerprint = excluded.fingerprint AND k.recovery_point = '')
			OR (k.status = 0 AND k.lock_token = excluded.lock_token)`)
	set(&s.IdempotencyExpiredDue, `SELECT 1 FROM idempotency_keys WHERE expires_at <= `+p(1)+` LIMIT 1`)
	s.Init(d)
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
