package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// SQL is the text of the queries of [Queries] in one database's SQL,
// written with the named parameters (@name) its comment lists and
// compiled by Init (see Params); SQL.named declares the names each caller
// passes. A Versioned pair (an UPDATE or DELETE conditional on a row's
// version or state, and the SELECT of that row, which tells a row that
// did not qualify from a missing one: see Conn.Send) takes one argument
// list, each statement using the names it needs. The SELECTs that read
// records select the columns of the record's column list, as [Records]
// reads them.
type SQL struct {
	// CardSessionInsert: every column, named after it (CardSessionValues).
	CardSessionInsert string
	// CardSessionGet: store_id, id.
	CardSessionGet string
	// CardSessionComplete, CardSessionExists (Versioned): status (the
	// new one), card_id, store_id, id, expected_status, now.
	CardSessionComplete, CardSessionExists string
	// CardSessionExpireDue: status (the new one), expected_status, now.
	CardSessionExpireDue string
	// CardSessionPurge deletes at most limit card sessions that saved no
	// card and expired before a time: before, limit. CardSessionPurgeDue
	// finds one of them: before.
	CardSessionPurge, CardSessionPurgeDue string

	// CardInsert: every column, named after it (CardValues).
	CardInsert string
	// CardGet: store_id, id.
	CardGet string
	// CardUpdateStatus: status, store_id, id.
	CardUpdateStatus string
	// CardList selects cards (CardColumns) with no WHERE; CardExists
	// finds a cursor card: store_id, customer_id, id.
	CardList, CardExists string
	// CardDelete: store_id, id.
	CardDelete string
	// IntentErase, CardSessionErase empty the personal data of a
	// customer's intents and card sessions: store_id, customer_id.
	IntentErase, CardSessionErase string

	// IntentInsert: every column, named after it (SealedIntentValues).
	IntentInsert string
	// IntentGet: store_id, id.
	IntentGet string
	// IntentGetByAttempt: attempt_id.
	IntentGetByAttempt string
	// CardOfIntent reads a card: store_id, intent_id, card_id ("" for
	// the intent's own card).
	CardOfIntent string
	// IntentStartAttempt records an intent's first attempt when the
	// intent and its card are as storage.AttemptStart requires, and must
	// change a row: attempt_id, now, merchant_id, reconcile_at, store_id,
	// id, expected_version, card_id, never (the zero time).
	IntentStartAttempt string
	// IntentExists (Versioned with the update derived from the intent's
	// columns): id, store_id.
	IntentExists string
	// IntentList selects intents with no WHERE; IntentSeq finds a
	// cursor's created_at and seq: store_id, id.
	IntentList, IntentSeq string
	// IntentListReconcileDue, IntentListExpireDue: now, limit.
	IntentListReconcileDue, IntentListExpireDue string
	// IntentStatusCounts reads (status, count) rows; IntentOutcomeUnknown
	// counts the processing intents whose outcome is unknown.
	IntentStatusCounts, IntentOutcomeUnknown string

	// AttemptCheckInsert: every column, named after it (AttemptCheckValues).
	AttemptCheckInsert string
	// AttemptCheckListDue: now, limit.
	AttemptCheckListDue string
	// AttemptCheckGet: attempt_id.
	AttemptCheckGet string
	// AttemptCheckReschedule: attempt_id, check_at, checks.
	AttemptCheckReschedule string
	// AttemptCheckDelete: attempt_id.
	AttemptCheckDelete string

	// RefundInsert: every column, named after it (RefundValues).
	RefundInsert string
	// RefundGet: store_id, id. RefundGetByIntent: store_id,
	// payment_intent_id. RefundGetByAttempt: attempt_id.
	RefundGet, RefundGetByIntent, RefundGetByAttempt string
	// RefundUpdate (Versioned with RefundExistsForUpdate): id, store_id,
	// every column of a refund that is not fixed (see refundTable),
	// expected_version.
	RefundUpdate, RefundExistsForUpdate string
	// RefundDelete, RefundExists (Versioned): store_id, id,
	// expected_version.
	RefundDelete, RefundExists string
	// ListIndex, when set, is the clause that names the index a list of
	// table walks for a filter on column ("created_at" when it has none)
	// after the list's FROM table, such as SQLite's INDEXED BY: without
	// statistics a planner may prefer the creation-time range of one index
	// to the equality of another and walk all of a store's rows in the
	// range.
	ListIndex func(table, column string) string
	// RefundList selects refunds with no WHERE; RefundSeq finds a
	// cursor's created_at and seq: store_id, id.
	RefundList, RefundSeq string
	// RefundListReconcileDue: now, limit.
	RefundListReconcileDue string

	// StoreInsert: every column, named after it (StoreValues).
	StoreInsert string
	// StoreGet selects the stores with no WHERE.
	StoreGet string
	// StoreUpdate, StoreExists (Versioned): id, every column of a store
	// that is not fixed (see storeTable), expected_version.
	StoreUpdate, StoreExists string

	// EventInsert are the statements that insert an event and its
	// pending delivery, run in order: id, store_id, type, body,
	// created_at.
	EventInsert []string
	// EventGet: store_id, id. EventSeq finds an event's seq: store_id,
	// id.
	EventGet, EventSeq string
	// DeliveryRedeliver makes an event's delivery pending again, and must
	// change a row (empty when DeliveryRedeliverGet does it);
	// DeliveryRedeliverGet then reads the event (EventColumns). Both:
	// now, event_id, store_id.
	DeliveryRedeliver, DeliveryRedeliverGet string
	// DeliveryClaimDue leases the deliveries that are due, each store's
	// up to its cap, the stores taking turns (empty when
	// DeliveryClaimDueJobs does it); DeliveryClaimDueJobs then reads
	// their jobs (JobColumns, then next_attempt_at). Both: lease_token,
	// lease_until, now, per_store, limit, and caps and caps_more, the two
	// values of ClaimCaps.
	DeliveryClaimDue, DeliveryClaimDueJobs string
	// ClaimCaps returns the two parameters that carry a claim's
	// StoreCaps to DeliveryClaimDue.
	ClaimCaps func(p storage.DeliveryClaimParams) (any, any, error)
	// DeliveryClaimEvent leases the delivery of one event, pending and
	// not leased, and must change a row (empty when DeliveryClaimEventJob
	// does it); DeliveryClaimEventJob then reads its job (JobColumns).
	// Both: lease_token, lease_until, event_id, now.
	DeliveryClaimEvent, DeliveryClaimEventJob string
	// DeliveryNextDue reads the due time and lease end of the earliest
	// pending delivery.
	DeliveryNextDue string
	// DeliveryAttemptList selects an event's attempts (store_id,
	// event_id) with no WHERE; DeliveryAttemptSeq finds a cursor's seq:
	// store_id, event_id, id.
	DeliveryAttemptList, DeliveryAttemptSeq string
	// DeliveryCounts reads the counts of pending and failed deliveries.
	DeliveryCounts string

	// IdempotencyGet: store_id, key.
	IdempotencyGet string
	// IdempotencyRelease deletes a running record that kept no step;
	// IdempotencyUnlock unlocks one that did. Both: store_id, key,
	// lock_token; IdempotencyUnlock then never (the zero time).
	IdempotencyRelease, IdempotencyUnlock string
	// IdempotencyBegin locks a key for a run, unless a record holds it
	// that has not expired and was not abandoned under the same request:
	// store_id, key, fingerprint, lock_token, locked_until, now,
	// expires_at, body (empty).
	IdempotencyBegin string
	// IdempotencyComplete, IdempotencyCompleted (Versioned): status,
	// body, store_id, key, lock_token. The first stores the response of
	// a running record, the second finds it stored already.
	IdempotencyComplete, IdempotencyCompleted string
	// IdempotencyProgress: recovery_point, object_id, store_id, key,
	// lock_token. IdempotencyProgressDone: recovery_point, object_id,
	// status, body, store_id, key, lock_token. Both change only a record
	// still running.
	IdempotencyProgress, IdempotencyProgressDone string
	// IdempotencyTake: store_id, key, fingerprint, lock_token,
	// locked_until, status, body, now (the created_at), expires_at,
	// recovery_point, object_id. It writes a record unless one is
	// running and not abandoned, or holds another request, or kept a
	// step; and changes one row when it did.
	IdempotencyTake string
	// IdempotencyDeleteExpired: now, limit. IdempotencyExpiredDue finds
	// one expired record: now.
	IdempotencyDeleteExpired, IdempotencyExpiredDue string

	// RateLimitDeleteExpired: now, limit.
	RateLimitDeleteExpired string

	// IntentSelect is what the SELECTs of intents select (default
	// IntentColumns): the columns, or one value that the adapter's Conn
	// reads as those columns.
	IntentSelect string

	// intentUpdate is the UPDATE of PaymentIntentUpdate, derived from the
	// columns (see Standard); Versioned with IntentExists.
	intentUpdate string
	compiled     bool
}

// Queries implements the part of storage.Executor that is the same for
// every database but for its SQL. An adapter embeds it in its own
// executor, which adds the rest.
type Queries struct {
	Records
	// R runs reads: the reader pool, or the transaction.
	R Conn
	// W runs writes.
	W Writer
	// SQL is the text of the queries, shared by every Queries of one
	// database (see SQL.Standard).
	SQL *SQL
}

// Init compiles the named parameters of s's queries into d's placeholders
// (see Params). It fails when a query names a parameter its caller does
// not pass, or its caller passes one that no statement of it uses, or a
// checked write starts with WITH. An adapter calls it once (Standard
// does), before any NewQueries with s; calling it again does nothing.
func (s *SQL) Init(d Dialect) error {
	if s.compiled {
		return nil
	}
	if err := compile(d, s.named()); err != nil {
		return err
	}
	s.compiled = true
	return nil
}

// NewQueries returns Queries on r and w with the SQL of s (see Init).
func NewQueries(rec Records, s *SQL, r Conn, w Writer) Queries {
	return Queries{Records: rec, R: r, W: w, SQL: s}
}

// exec runs a write of one statement (Conn.Send).
func (q *Queries) exec(ctx context.Context, query string, args ...any) error {
	return q.send(ctx, query, "", args, nil, nil)
}

// execCount runs a write of one statement and returns the rows it
// changed.
func (q *Queries) execCount(ctx context.Context, query string, args ...any) (int, error) {
	var n int64
	err := q.W.Write(ctx, func(w Conn) error {
		var err error
		n, err = w.Exec(ctx, query, args...)
		return q.D.MapErr(err)
	})
	return int(n), err
}

// execOne runs a write of one statement that must change a row:
// storage.ErrNotFound when it changed none (Conn.Send).
func (q *Queries) execOne(ctx context.Context, query string, args ...any) error {
	return q.send(ctx, query, "", args, storage.ErrNotFound, nil)
}

// ExecOne runs a statement on w that must change a row:
// storage.ErrNotFound when it changed none.
func ExecOne(ctx context.Context, w Conn, d Dialect, query string, args ...any) error {
	n, err := w.Exec(ctx, query, args...)
	if err != nil {
		return d.MapErr(err)
	}
	if n == 0 {
		return storage.ErrNotFound
	}
	return nil
}

// send is Conn.Send in a write of its own, or the transaction's.
func (q *Queries) send(ctx context.Context, write, exists string, args []any, gone, conflict error) error {
	return q.W.Write(ctx, func(w Conn) error {
		return w.Send(ctx, write, exists, args, gone, conflict)
	})
}

// versioned runs a Versioned pair (see SQL) in a write of its own, or the
// transaction's (Conn.Send): storage.ErrNotFound for a missing row,
// conflict for one that did not qualify. A nil conflict means a row that did not qualify is no
// error.
func (q *Queries) versioned(ctx context.Context, write, exists string, args []any, conflict error) error {
	return q.send(ctx, write, exists, args, storage.ErrNotFound, conflict)
}

// AnyDue reports whether query, a read that selects at most one row,
// finds one. Outside a transaction it is read first, so that a sweep that
// finds nothing (most of them) costs the writer nothing; inside one it
// reports true, and the sweep's own statements decide.
func (q *Queries) AnyDue(ctx context.Context, query string, args ...any) (bool, error) {
	if q.W.InTx() {
		return true, nil
	}
	var one any
	switch err := q.D.MapErr(q.R.QueryRow(ctx, query, args...).Scan(&one)); err {
	case nil:
		return true, nil
	case storage.ErrNotFound:
		return false, nil
	default:
		return false, err
	}
}

// Sweep deletes at most limit rows that are due: it reads due (on
// dueArgs, a read of at most one due row) first, with AnyDue, and only
// when that finds one runs del in a write. It returns the rows del
// deleted.
func (q *Queries) Sweep(ctx context.Context, limit int, due string, dueArgs []any, del func(w Conn) (int64, error)) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	if found, err := q.AnyDue(ctx, due, dueArgs...); !found {
		return 0, err
	}
	var n int64
	err := q.W.Write(ctx, func(w Conn) error {
		var err error
		n, err = del(w)
		return q.D.MapErr(err)
	})
	return int(n), err
}

// sweep is Sweep of one statement, on before and limit.
func (q *Queries) sweep(ctx context.Context, limit int, due, del string, before time.Time) (int, error) {
	return q.Sweep(ctx, limit, due, []any{q.D.Time(before)}, func(w Conn) (int64, error) {
		return w.Exec(ctx, del, q.D.Time(before), limit)
	})
}

// list reads a list of records (see List) on the reader.
func list[T any](ctx context.Context, q *Queries, l ListQuery, scan func(Row) (T, error)) ([]T, bool, error) {
	return List(ctx, q.R, q.D, l, scan)
}

// Card sessions.

// CardSessionInsert implements storage.Executor.
func (q *Queries) CardSessionInsert(ctx context.Context, s *keelpay.CardSession) error {
	values, err := q.CardSessionValues(s)
	if err != nil {
		return err
	}
	return q.exec(ctx, q.SQL.CardSessionInsert, values...)
}

// CardSessionGet implements storage.Executor.
func (q *Queries) CardSessionGet(ctx context.Context, storeID, id string) (*keelpay.CardSession, error) {
	return q.ScanCardSession(q.R.QueryRow(ctx, q.SQL.CardSessionGet, storeID, id))
}

// CardSessionComplete implements storage.Executor.
func (q *Queries) CardSessionComplete(ctx context.Context, storeID, id, cardID string, now time.Time) error {
	return q.versioned(ctx, q.SQL.CardSessionComplete, q.SQL.CardSessionExists,
		[]any{string(keelpay.CardSessionCompleted), cardID, storeID, id, string(keelpay.CardSessionOpen), q.D.Time(now)},
		fmt.Errorf("%w: card session %s is not open", storage.ErrConflict, id))
}

// CardSessionExpireDue implements storage.Executor.
func (q *Queries) CardSessionExpireDue(ctx context.Context, now time.Time) (int, error) {
	return q.execCount(ctx, q.SQL.CardSessionExpireDue,
		string(keelpay.CardSessionExpired), string(keelpay.CardSessionOpen), q.D.Time(now))
}

// CardSessionDeleteExpiredBefore implements storage.Executor.
func (q *Queries) CardSessionDeleteExpiredBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	return q.sweep(ctx, limit, q.SQL.CardSessionPurgeDue, q.SQL.CardSessionPurge, before)
}

// Cards.

// CardInsert implements storage.Executor.
func (q *Queries) CardInsert(ctx context.Context, c *keelpay.Card) error {
	return q.exec(ctx, q.SQL.CardInsert, q.CardValues(c)...)
}

// CardGet implements storage.Executor.
func (q *Queries) CardGet(ctx context.Context, storeID, id string) (*keelpay.Card, error) {
	return q.ScanCard(q.R.QueryRow(ctx, q.SQL.CardGet, storeID, id))
}

// CardUpdateStatus implements storage.Executor.
func (q *Queries) CardUpdateStatus(ctx context.Context, storeID, id string, status keelpay.CardStatus) error {
	return q.execOne(ctx, q.SQL.CardUpdateStatus, string(status), storeID, id)
}

// Payment intents.

// CardList implements storage.Executor. Cards have no sequence column:
// the order is (created_at, id), and a cursor is compared as that pair.
func (q *Queries) CardList(ctx context.Context, p storage.CardListParams) ([]*keelpay.Card, bool, error) {
	pl := q.D.Placeholder
	args := []any{p.StoreID, p.CustomerID}
	where := `store_id = ` + pl(1) + ` AND customer_id = ` + pl(2)
	order, cmp, cursor := "DESC", "<", p.StartingAfter
	if p.EndingBefore != "" {
		order, cmp, cursor = "ASC", ">", p.EndingBefore
	}
	if cursor != "" {
		var one int
		if err := q.R.QueryRow(ctx, q.SQL.CardExists, p.StoreID, p.CustomerID, cursor).Scan(&one); err != nil {
			return nil, false, q.D.MapErr(err)
		}
		args = append(args, cursor)
		where += ` AND (created_at, id) ` + cmp + ` (SELECT created_at, id FROM cards WHERE store_id = ` + pl(1) + ` AND id = ` + pl(3) + `)`
	}
	args = append(args, p.Limit+1)
	rows, err := q.R.Query(ctx, q.SQL.CardList+` WHERE `+where+` ORDER BY created_at `+order+`, id `+order+` LIMIT `+pl(len(args)), args...)
	cards, err := Collect(q.D, rows, err, q.ScanCard)
	if err != nil {
		return nil, false, err
	}
	cards, hasMore := storage.Page(cards, p.Limit, order == "ASC")
	return cards, hasMore, nil
}

// CardDelete implements storage.Executor.
func (q *Queries) CardDelete(ctx context.Context, storeID, id string) error {
	return q.execOne(ctx, q.SQL.CardDelete, storeID, id)
}

// CustomerErase implements storage.Executor.
func (q *Queries) CustomerErase(ctx context.Context, storeID, customerID string) (storage.CustomerErasure, error) {
	var e storage.CustomerErasure
	err := q.W.Write(ctx, func(w Conn) error {
		n, err := w.Exec(ctx, q.SQL.IntentErase, storeID, customerID)
		if err != nil {
			return q.D.MapErr(err)
		}
		e.PaymentIntents = int(n)
		n, err = w.Exec(ctx, q.SQL.CardSessionErase, storeID, customerID)
		if err != nil {
			return q.D.MapErr(err)
		}
		e.CardSessions = int(n)
		return nil
	})
	return e, err
}

// PaymentIntentInsert implements storage.Executor.
func (q *Queries) PaymentIntentInsert(ctx context.Context, pi *keelpay.PaymentIntent) error {
	values, err := q.SealedIntentValues(pi)
	if err != nil {
		return err
	}
	return q.exec(ctx, q.SQL.IntentInsert, values...)
}

// PaymentIntentGet implements storage.Executor.
func (q *Queries) PaymentIntentGet(ctx context.Context, storeID, id string) (*keelpay.PaymentIntent, error) {
	return q.ScanIntent(q.R.QueryRow(ctx, q.SQL.IntentGet, storeID, id))
}

// PaymentIntentGetWithCard implements storage.Executor.
func (q *Queries) PaymentIntentGetWithCard(ctx context.Context, storeID, id, cardID string) (pi *keelpay.PaymentIntent, card *keelpay.Card, err error) {
	err = q.R.QueryRows(ctx, []RowQuery{
		{SQL: q.SQL.IntentGet, Args: []any{storeID, id}, Scan: func(row Row) (err error) {
			pi, err = q.ScanIntent(row)
			return err
		}},
		{SQL: q.SQL.CardOfIntent, Args: []any{storeID, id, cardID}, Scan: func(row Row) (err error) {
			card, err = q.ScanCard(row)
			if errors.Is(err, storage.ErrNotFound) {
				card, err = nil, nil
			}
			return err
		}},
	})
	if err != nil {
		return nil, nil, err
	}
	return pi, card, nil
}

// PaymentIntentGetByAttempt implements storage.Executor.
func (q *Queries) PaymentIntentGetByAttempt(ctx context.Context, attemptID string) (*keelpay.PaymentIntent, error) {
	if attemptID == "" {
		return nil, storage.ErrNotFound
	}
	return q.ScanIntent(q.R.QueryRow(ctx, q.SQL.IntentGetByAttempt, attemptID))
}

// PaymentIntentUpdate implements storage.Executor.
func (q *Queries) PaymentIntentUpdate(ctx context.Context, pi *keelpay.PaymentIntent, expectedVersion int64) error {
	next := *pi
	next.Version = expectedVersion + 1
	args, err := q.intentUpdateArgs(&next, expectedVersion)
	if err != nil {
		return err
	}
	err = q.versioned(ctx, q.SQL.intentUpdate, q.SQL.IntentExists, args,
		fmt.Errorf("%w: payment intent %s is no longer at version %d", storage.ErrConflict, pi.ID, expectedVersion))
	if err != nil {
		return err
	}
	pi.Version = next.Version
	return nil
}

// PaymentIntentStartAttempt implements storage.Executor: the card is
// read, the attempt written with its checks, and the intent read back,
// in the current transaction or one of their own (on PostgreSQL one round
// trip, in a batch or not). The card is read before the write, which
// checks it again: a card the write found and the read did not cannot
// be, as cards are inserted before any intent names them; should it
// happen, the write stands and Card is nil.
func (q *Queries) PaymentIntentStartAttempt(ctx context.Context, a *storage.AttemptStart) error {
	a.Intent, a.Card = nil, nil
	d := q.D
	write := []any{a.AttemptID, d.Time(a.Now), a.MerchantID, d.Time(a.ReconcileAt), a.StoreID, a.ID,
		a.ExpectedVersion, a.CardID, d.Time(time.Time{})}
	conflict := fmt.Errorf("%w: payment intent %s is not at version %d unattempted with an active card of its customer", storage.ErrConflict, a.ID, a.ExpectedVersion)
	return q.W.Write(ctx, func(w Conn) error {
		err := w.SendRead(ctx, q.SQL.CardOfIntent, []any{a.StoreID, a.ID, a.CardID}, func(row Row) error {
			card, err := q.ScanCard(row)
			if errors.Is(err, storage.ErrNotFound) {
				return nil
			}
			a.Card = card
			return err
		})
		if err == nil {
			err = w.Send(ctx, q.SQL.IntentStartAttempt, "", write, conflict, nil)
		}
		if err == nil {
			err = w.SendRead(ctx, q.SQL.IntentGet, []any{a.StoreID, a.ID}, func(row Row) (err error) {
				a.Intent, err = q.ScanIntent(row)
				return err
			})
		}
		return err
	})
}

// PaymentIntentList implements storage.Executor.
//
// The page is ordered by (created_at, seq) so that each filter is a range
// of one of the indexes on (store_id, <filter column>, created_at, seq),
// with or without a creation-time range and a cursor.
func (q *Queries) PaymentIntentList(ctx context.Context, p storage.PaymentIntentListParams) ([]*keelpay.PaymentIntent, bool, error) {
	return list(ctx, q, q.IntentListQuery(p), q.ScanIntent)
}

// IntentListQuery is the ListQuery of PaymentIntentList.
func (q *Queries) IntentListQuery(p storage.PaymentIntentListParams) ListQuery {
	f := Filter{D: q.D, Where: "store_id = " + q.D.Placeholder(1), Args: []any{p.StoreID}}
	f.Eq("customer_id", p.CustomerID)
	f.Eq("status", string(p.Status))
	f.Eq("reference", p.Reference)
	f.Range("created_at", p.CreatedGTE, p.CreatedLT)
	return ListQuery{
		Select: q.SQL.IntentList + q.listIndex("payment_intents", p.Reference, "reference", p.CustomerID, "customer_id", string(p.Status), "status"), Where: f.Where, Args: f.Args,
		Seq: "seq", Created: "created_at", SeqQuery: q.SQL.IntentSeq, SeqArgs: []any{p.StoreID},
		StartingAfter: p.StartingAfter, EndingBefore: p.EndingBefore, Limit: p.Limit,
	}
}

// PaymentIntentListReconcileDue implements storage.Executor.
func (q *Queries) PaymentIntentListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	rows, err := q.R.Query(ctx, q.SQL.IntentListReconcileDue, q.D.Time(now), limit)
	return Collect(q.D, rows, err, q.ScanIntent)
}

// PaymentIntentListExpireDue implements storage.Executor.
func (q *Queries) PaymentIntentListExpireDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	rows, err := q.R.Query(ctx, q.SQL.IntentListExpireDue, q.D.Time(now), limit)
	return Collect(q.D, rows, err, q.ScanIntent)
}

// PaymentIntentCounts implements storage.Executor.
func (q *Queries) PaymentIntentCounts(ctx context.Context) (storage.PaymentIntentCounts, error) {
	c := storage.PaymentIntentCounts{ByStatus: map[keelpay.PaymentIntentStatus]int{}}
	rows, err := q.R.Query(ctx, q.SQL.IntentStatusCounts)
	if err != nil {
		return c, q.D.MapErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return c, q.D.MapErr(err)
		}
		if n != 0 {
			c.ByStatus[keelpay.PaymentIntentStatus(status)] = n
		}
	}
	if err := rows.Err(); err != nil {
		return c, q.D.MapErr(err)
	}
	err = q.R.QueryRow(ctx, q.SQL.IntentOutcomeUnknown).Scan(&c.OutcomeUnknown)
	return c, q.D.MapErr(err)
}

// Attempt checks.

// AttemptCheckInsert implements storage.Executor.
func (q *Queries) AttemptCheckInsert(ctx context.Context, c *storage.AttemptCheck) error {
	return q.exec(ctx, q.SQL.AttemptCheckInsert, q.AttemptCheckValues(c)...)
}

// AttemptCheckListDue implements storage.Executor.
func (q *Queries) AttemptCheckListDue(ctx context.Context, now time.Time, limit int) ([]*storage.AttemptCheck, error) {
	rows, err := q.R.Query(ctx, q.SQL.AttemptCheckListDue, q.D.Time(now), limit)
	return Collect(q.D, rows, err, q.ScanAttemptCheck)
}

// AttemptCheckGet implements storage.Executor.
func (q *Queries) AttemptCheckGet(ctx context.Context, attemptID string) (*storage.AttemptCheck, error) {
	return q.ScanAttemptCheck(q.R.QueryRow(ctx, q.SQL.AttemptCheckGet, attemptID))
}

// AttemptCheckReschedule implements storage.Executor.
func (q *Queries) AttemptCheckReschedule(ctx context.Context, attemptID string, checkAt time.Time, checks int) error {
	return q.execOne(ctx, q.SQL.AttemptCheckReschedule, attemptID, q.D.Time(checkAt), checks)
}

// AttemptCheckDelete implements storage.Executor.
func (q *Queries) AttemptCheckDelete(ctx context.Context, attemptID string) error {
	return q.exec(ctx, q.SQL.AttemptCheckDelete, attemptID)
}

// Refunds.

// RefundInsert implements storage.Executor.
func (q *Queries) RefundInsert(ctx context.Context, r *keelpay.Refund) error {
	values, err := q.RefundValues(r)
	if err != nil {
		return err
	}
	return q.exec(ctx, q.SQL.RefundInsert, values...)
}

// RefundGet implements storage.Executor.
func (q *Queries) RefundGet(ctx context.Context, storeID, id string) (*keelpay.Refund, error) {
	return q.ScanRefund(q.R.QueryRow(ctx, q.SQL.RefundGet, storeID, id))
}

// RefundGetByIntent implements storage.Executor.
func (q *Queries) RefundGetByIntent(ctx context.Context, storeID, paymentIntentID string) (*keelpay.Refund, error) {
	return q.ScanRefund(q.R.QueryRow(ctx, q.SQL.RefundGetByIntent, storeID, paymentIntentID))
}

// RefundGetByAttempt implements storage.Executor.
func (q *Queries) RefundGetByAttempt(ctx context.Context, attemptID string) (*keelpay.Refund, error) {
	return q.ScanRefund(q.R.QueryRow(ctx, q.SQL.RefundGetByAttempt, attemptID))
}

// RefundUpdate implements storage.Executor.
func (q *Queries) RefundUpdate(ctx context.Context, r *keelpay.Refund, expectedVersion int64) error {
	next := *r
	next.Version = expectedVersion + 1
	args, err := refundTable.updateArgs(q.Records, &next, expectedVersion)
	if err != nil {
		return err
	}
	err = q.versioned(ctx, q.SQL.RefundUpdate, q.SQL.RefundExistsForUpdate, args,
		fmt.Errorf("%w: refund %s is no longer at version %d", storage.ErrConflict, r.ID, expectedVersion))
	if err != nil {
		return err
	}
	r.Version = next.Version
	return nil
}

// RefundDelete implements storage.Executor.
func (q *Queries) RefundDelete(ctx context.Context, storeID, id string, expectedVersion int64) error {
	return q.versioned(ctx, q.SQL.RefundDelete, q.SQL.RefundExists, []any{storeID, id, expectedVersion},
		fmt.Errorf("%w: refund %s is no longer at version %d", storage.ErrConflict, id, expectedVersion))
}

// RefundList implements storage.Executor, as PaymentIntentList.
func (q *Queries) RefundList(ctx context.Context, p storage.RefundListParams) ([]*keelpay.Refund, bool, error) {
	return list(ctx, q, q.RefundListQuery(p), q.ScanRefund)
}

// RefundListQuery is the ListQuery of RefundList.
func (q *Queries) RefundListQuery(p storage.RefundListParams) ListQuery {
	f := Filter{D: q.D, Where: "store_id = " + q.D.Placeholder(1), Args: []any{p.StoreID}}
	f.Eq("payment_intent_id", p.PaymentIntentID)
	f.Eq("status", string(p.Status))
	f.Range("created_at", p.CreatedGTE, p.CreatedLT)
	return ListQuery{
		Select: q.SQL.RefundList + q.listIndex("refunds", p.PaymentIntentID, "payment_intent_id", string(p.Status), "status"), Where: f.Where, Args: f.Args,
		Seq: "seq", Created: "created_at", SeqQuery: q.SQL.RefundSeq, SeqArgs: []any{p.StoreID},
		StartingAfter: p.StartingAfter, EndingBefore: p.EndingBefore, Limit: p.Limit,
	}
}

// listIndex is the ListIndex clause of a list of table whose filters are
// given as (value, column) pairs, most selective first: the first set one
// is the index's, or created_at when none is.
func (q *Queries) listIndex(table string, filters ...string) string {
	if q.SQL.ListIndex == nil {
		return ""
	}
	column := "created_at"
	for i := 0; i < len(filters); i += 2 {
		if filters[i] != "" {
			column = filters[i+1]
			break
		}
	}
	return q.SQL.ListIndex(table, column)
}

// RefundListReconcileDue implements storage.Executor.
func (q *Queries) RefundListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.Refund, error) {
	rows, err := q.R.Query(ctx, q.SQL.RefundListReconcileDue, q.D.Time(now), limit)
	return Collect(q.D, rows, err, q.ScanRefund)
}

// Stores.

// StoreInsert implements storage.Executor.
func (q *Queries) StoreInsert(ctx context.Context, s *keelpay.Store) error {
	values := q.StoreValues(s)
	return q.W.WriteStores(ctx, func(w Conn) error {
		_, err := w.Exec(ctx, q.SQL.StoreInsert, values...)
		return q.D.MapErr(err)
	})
}

func (q *Queries) storeGet(ctx context.Context, column string, value any) (*keelpay.Store, error) {
	return q.ScanStore(q.R.QueryRow(ctx, q.SQL.StoreGet+` WHERE `+column+` = `+q.D.Placeholder(1), value))
}

// StoreGetByID implements storage.Executor.
func (q *Queries) StoreGetByID(ctx context.Context, id string) (*keelpay.Store, error) {
	return q.storeGet(ctx, "id", id)
}

// StoreGetByClientID implements storage.Executor.
func (q *Queries) StoreGetByClientID(ctx context.Context, clientID string) (*keelpay.Store, error) {
	return q.storeGet(ctx, "client_id", clientID)
}

// StoreGetBySecretKeyHash implements storage.Executor.
func (q *Queries) StoreGetBySecretKeyHash(ctx context.Context, hash []byte) (*keelpay.Store, error) {
	return q.storeGet(ctx, "secret_key_hash", hash)
}

// StoreGetByPublishableKey implements storage.Executor.
func (q *Queries) StoreGetByPublishableKey(ctx context.Context, key string) (*keelpay.Store, error) {
	return q.storeGet(ctx, "publishable_key", key)
}

// StoreUpdate implements storage.Executor.
func (q *Queries) StoreUpdate(ctx context.Context, s *keelpay.Store, expectedVersion int64) error {
	next := *s
	next.Version = expectedVersion + 1
	args, err := storeTable.updateArgs(q.Records, &next, expectedVersion)
	if err != nil {
		return err
	}
	err = q.W.WriteStores(ctx, func(w Conn) error {
		return w.Send(ctx, q.SQL.StoreUpdate, q.SQL.StoreExists, args, storage.ErrNotFound,
			fmt.Errorf("%w: store %s is no longer at version %d", storage.ErrConflict, s.ID, expectedVersion))
	})
	if err != nil {
		return err
	}
	s.Version = next.Version
	return nil
}

// Events and deliveries.

// EventGet implements storage.Executor.
func (q *Queries) EventGet(ctx context.Context, storeID, id string) (*keelpay.Event, error) {
	return q.ScanEvent(q.R.QueryRow(ctx, q.SQL.EventGet, storeID, id))
}

// EventInsert implements storage.Executor.
func (q *Queries) EventInsert(ctx context.Context, e *keelpay.Event) error {
	err := q.W.Write(ctx, func(w Conn) error {
		args := []any{e.ID, e.StoreID, string(e.Type), []byte(e.Body), q.D.Time(e.CreatedAt)}
		for _, stmt := range q.SQL.EventInsert {
			if err := w.Send(ctx, stmt, "", args, nil, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.Delivery = keelpay.Delivery{Status: keelpay.DeliveryPending, NextAttemptAt: e.CreatedAt}
	return nil
}

// DeliveryRedeliver implements storage.Executor.
func (q *Queries) DeliveryRedeliver(ctx context.Context, storeID, eventID string, now time.Time) (*keelpay.Event, error) {
	var e *keelpay.Event
	err := q.W.Write(ctx, func(w Conn) error {
		args := []any{q.D.Time(now), eventID, storeID}
		if q.SQL.DeliveryRedeliver != "" {
			if err := ExecOne(ctx, w, q.D, q.SQL.DeliveryRedeliver, args...); err != nil {
				return err
			}
		}
		var err error
		e, err = q.ScanEvent(w.QueryRow(ctx, q.SQL.DeliveryRedeliverGet, args...))
		return err
	})
	return e, err
}

// EventList implements storage.Executor.
func (q *Queries) EventList(ctx context.Context, p storage.EventListParams) ([]*keelpay.Event, bool, error) {
	l := ListQuery{
		Select: `SELECT ` + EventColumns + ` FROM events e JOIN deliveries d ON d.event_id = e.id`,
		Where:  "e.store_id = " + q.D.Placeholder(1), Args: []any{p.StoreID},
		Seq: "e.seq", SeqQuery: q.SQL.EventSeq, SeqArgs: []any{p.StoreID},
		StartingAfter: p.StartingAfter, EndingBefore: p.EndingBefore, Limit: p.Limit,
	}
	if p.Type != "" {
		l.Where += " AND e.type = " + q.D.Placeholder(2)
		l.Args = append(l.Args, string(p.Type))
	}
	return list(ctx, q, l, q.ScanEvent)
}

// DeliveryClaimDue implements storage.Executor.
func (q *Queries) DeliveryClaimDue(ctx context.Context, p storage.DeliveryClaimParams) ([]*storage.DeliveryJob, error) {
	caps, caps2, err := q.SQL.ClaimCaps(p)
	if err != nil {
		return nil, err
	}
	args := []any{p.LeaseToken, q.D.Time(p.LeaseUntil), q.D.Time(p.Now), p.PerStore, p.Limit, caps, caps2}
	type claimed struct {
		job  *storage.DeliveryJob
		next time.Time
	}
	var got []claimed
	err = q.W.Write(ctx, func(w Conn) error {
		got = nil
		if q.SQL.DeliveryClaimDue != "" {
			if n, err := w.Exec(ctx, q.SQL.DeliveryClaimDue, args...); err != nil || n == 0 {
				return q.D.MapErr(err)
			}
		}
		jobs := q.Jobs(p.LeaseToken)
		rows, err := w.Query(ctx, q.SQL.DeliveryClaimDueJobs, args...)
		got, err = Collect(q.D, rows, err, func(row Row) (c claimed, err error) {
			c.job, err = jobs.Scan(row, q.D.TimeDst(&c.next))
			return c, err
		})
		return err
	})
	if err != nil || len(got) == 0 {
		return nil, err
	}
	// Earliest due first.
	slices.SortFunc(got, func(a, b claimed) int {
		return cmp.Or(a.next.Compare(b.next), cmp.Compare(a.job.EventID, b.job.EventID))
	})
	out := make([]*storage.DeliveryJob, len(got))
	for i, c := range got {
		out[i] = c.job
	}
	return out, nil
}

// DeliveryClaimEvent implements storage.Executor.
func (q *Queries) DeliveryClaimEvent(ctx context.Context, eventID string, p storage.DeliveryClaimParams) (*storage.DeliveryJob, error) {
	var job *storage.DeliveryJob
	err := q.W.Write(ctx, func(w Conn) error {
		args := []any{p.LeaseToken, q.D.Time(p.LeaseUntil), eventID, q.D.Time(p.Now)}
		if q.SQL.DeliveryClaimEvent != "" {
			if err := ExecOne(ctx, w, q.D, q.SQL.DeliveryClaimEvent, args...); err != nil {
				return err
			}
		}
		var err error
		job, err = q.Jobs(p.LeaseToken).Scan(w.QueryRow(ctx, q.SQL.DeliveryClaimEventJob, args...))
		return err
	})
	return job, err
}

// DeliveryRedeliverMany implements storage.Executor.
func (q *Queries) DeliveryRedeliverMany(ctx context.Context, p storage.DeliveryRedeliverManyParams) (int, string, error) {
	var queued int
	var next string
	err := q.W.Write(ctx, func(w Conn) error {
		queued, next = 0, ""
		args := []any{p.StoreID, string(p.Status)}
		arg := func(v any) string {
			args = append(args, v)
			return q.D.Placeholder(len(args))
		}
		where := "e.store_id = " + q.D.Placeholder(1) + " AND d.status = " + q.D.Placeholder(2)
		if p.Type != "" {
			where += " AND e.type = " + arg(string(p.Type))
		}
		if !p.CreatedAfter.IsZero() {
			where += " AND e.created_at > " + arg(q.D.Time(p.CreatedAfter))
		}
		if !p.CreatedBefore.IsZero() {
			where += " AND e.created_at < " + arg(q.D.Time(p.CreatedBefore))
		}
		if p.StartingAfter != "" {
			var seq int64
			if err := w.QueryRow(ctx, q.SQL.EventSeq, p.StoreID, p.StartingAfter).Scan(&seq); err != nil {
				return q.D.MapErr(err)
			}
			where += " AND e.seq > " + arg(seq)
		}
		from := ` FROM events e JOIN deliveries d ON d.event_id = e.id WHERE ` + where
		// The last event of this call, when at least Limit match; and
		// whether any matches beyond it.
		var last int64
		var lastID string
		var more bool
		offset := arg(p.Limit - 1)
		err := w.QueryRow(ctx, `SELECT b.seq, b.id, EXISTS (SELECT 1`+from+` AND e.seq > b.seq)
			FROM (SELECT e.seq, e.id`+from+` ORDER BY e.seq LIMIT 1 OFFSET `+offset+`) b`, args...).Scan(&last, &lastID, &more)
		args = args[:len(args)-1]
		switch err = q.D.MapErr(err); err {
		case nil:
			if more {
				next = lastID
			}
			where += " AND e.seq <= " + arg(last)
		case storage.ErrNotFound:
		default:
			return err
		}
		now, never := arg(q.D.Time(p.Now)), arg(q.D.Time(time.Time{}))
		n, err := w.Exec(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0, next_attempt_at = `+now+`,
			lease_token = '', lease_until = `+never+`
			WHERE event_id IN (SELECT e.id FROM events e JOIN deliveries d ON d.event_id = e.id WHERE `+where+`)`, args...)
		queued = int(n)
		return q.D.MapErr(err)
	})
	return queued, next, err
}

// DeliveryNextDue implements storage.Executor.
func (q *Queries) DeliveryNextDue(ctx context.Context) (time.Time, error) {
	// The earliest pending delivery in the due index; when it is leased,
	// its lease's end. A seek, not a scan: the dispatcher asks often.
	var next, lease time.Time
	err := q.D.MapErr(q.R.QueryRow(ctx, q.SQL.DeliveryNextDue).Scan(q.D.TimeDst(&next), q.D.TimeDst(&lease)))
	if err == storage.ErrNotFound {
		return time.Time{}, nil
	}
	if lease.After(next) {
		next = lease
	}
	return next, err
}

// DeliveryAttemptList implements storage.Executor.
func (q *Queries) DeliveryAttemptList(ctx context.Context, p storage.DeliveryAttemptListParams) ([]*keelpay.DeliveryAttempt, bool, error) {
	return list(ctx, q, ListQuery{
		Select: q.SQL.DeliveryAttemptList,
		Where:  "store_id = " + q.D.Placeholder(1) + " AND event_id = " + q.D.Placeholder(2), Args: []any{p.StoreID, p.EventID},
		Seq: "seq", SeqQuery: q.SQL.DeliveryAttemptSeq, SeqArgs: []any{p.StoreID, p.EventID},
		StartingAfter: p.StartingAfter, EndingBefore: p.EndingBefore, Limit: p.Limit,
	}, q.ScanDeliveryAttempt)
}

// DeliveryCounts implements storage.Executor.
func (q *Queries) DeliveryCounts(ctx context.Context) (pending, failed int, err error) {
	// Kept by triggers as deliveries change (status_counts).
	err = q.R.QueryRow(ctx, q.SQL.DeliveryCounts).Scan(&pending, &failed)
	return pending, failed, q.D.MapErr(err)
}

// Idempotency keys.

// IdempotencyGet implements storage.Executor.
func (q *Queries) IdempotencyGet(ctx context.Context, storeID, key string) (*storage.IdempotencyRecord, error) {
	return q.ScanIdempotency(q.R.QueryRow(ctx, q.SQL.IdempotencyGet, storeID, key))
}

// IdempotencyBegin implements storage.Executor.
func (q *Queries) IdempotencyBegin(ctx context.Context, p storage.IdempotencyBeginParams) (*storage.IdempotencyRecord, bool, error) {
	var rec *storage.IdempotencyRecord
	var n int64
	err := q.W.Write(ctx, func(w Conn) error {
		// One statement decides, so that of concurrent runs exactly one
		// locks the key. When it does not, ON CONFLICT still locks the row
		// until the end of the transaction, so the read after it reads the
		// row that won.
		var err error
		n, err = w.ExecQueryRow(ctx, q.SQL.IdempotencyBegin,
			[]any{p.StoreID, p.Key, p.Fingerprint, p.LockToken, q.D.Time(p.LockedUntil), q.D.Time(p.Now), q.D.Time(p.ExpiresAt), []byte{}},
			q.SQL.IdempotencyGet, []any{p.StoreID, p.Key},
			func(row Row) error {
				var err error
				rec, err = q.ScanIdempotency(row)
				return err
			})
		return q.D.MapErr(err)
	})
	if err != nil {
		return nil, false, err
	}
	return rec, n == 1, nil
}

// IdempotencyRelease implements storage.Executor.
func (q *Queries) IdempotencyRelease(ctx context.Context, storeID, key, lockToken string) error {
	return q.W.Write(ctx, func(w Conn) error {
		// A run that committed a step keeps it for the next run to resume.
		if err := ExecOne(ctx, w, q.D, q.SQL.IdempotencyRelease, storeID, key, lockToken); err != storage.ErrNotFound {
			return err
		}
		return ExecOne(ctx, w, q.D, q.SQL.IdempotencyUnlock, storeID, key, lockToken, q.D.Time(time.Time{}))
	})
}

// IdempotencyComplete implements storage.Executor.
func (q *Queries) IdempotencyComplete(ctx context.Context, p storage.IdempotencyCompleteParams) error {
	if p.Status <= 0 {
		return fmt.Errorf("%s: idempotency complete: status %d is not a response status", q.D.Name(), p.Status)
	}
	body := q.Codec.SealBody(p.StoreID, p.Key, p.Body)
	// Already completed by this run (inside its last change's
	// transaction): nothing to do.
	return q.versioned(ctx, q.SQL.IdempotencyComplete, q.SQL.IdempotencyCompleted,
		[]any{p.Status, body, p.StoreID, p.Key, p.LockToken}, nil)
}

// IdempotencyProgress implements storage.Executor.
func (q *Queries) IdempotencyProgress(ctx context.Context, p storage.IdempotencyProgressParams) error {
	if p.Status > 0 {
		body := q.Codec.SealBody(p.StoreID, p.Key, p.Body)
		return q.send(ctx, q.SQL.IdempotencyProgressDone, "",
			[]any{p.RecoveryPoint, p.ObjectID, p.Status, body, p.StoreID, p.Key, p.LockToken}, storage.ErrIdempotencyKeyLost, nil)
	}
	return q.send(ctx, q.SQL.IdempotencyProgress, "",
		[]any{p.RecoveryPoint, p.ObjectID, p.StoreID, p.Key, p.LockToken}, storage.ErrIdempotencyKeyLost, nil)
}

// IdempotencyTake implements storage.Executor.
func (q *Queries) IdempotencyTake(ctx context.Context, p storage.IdempotencyTakeParams) error {
	body, lockedUntil := []byte{}, p.LockedUntil
	if p.Status > 0 {
		body, lockedUntil = q.Codec.SealBody(p.StoreID, p.Key, p.Body), time.Time{}
	}
	return q.send(ctx, q.SQL.IdempotencyTake, "", []any{
		p.StoreID, p.Key, p.Fingerprint, p.LockToken, q.D.Time(lockedUntil), max(p.Status, 0), body, q.D.Time(p.Now), q.D.Time(p.ExpiresAt),
		p.RecoveryPoint, p.ObjectID,
	}, storage.ErrIdempotencyKeyBusy, nil)
}

// IdempotencyDeleteExpired implements storage.Executor.
func (q *Queries) IdempotencyDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	return q.sweep(ctx, limit, q.SQL.IdempotencyExpiredDue, q.SQL.IdempotencyDeleteExpired, now)
}

// Rate limits.

// RateLimitDeleteExpired implements storage.Executor.
func (q *Queries) RateLimitDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	return q.execCount(ctx, q.SQL.RateLimitDeleteExpired, q.D.Time(now), limit)
}
