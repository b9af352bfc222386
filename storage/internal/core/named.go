package core

import (
	"fmt"
	"slices"
	"strings"
)

// Params names the parameters of a query, in the order in which its
// caller passes their values. The SQL of [SQL] is written with named
// parameters, @name, and SQL.Init compiles each @name into the
// database's placeholder of that name's position in Params: the caller's
// values bind by name, whatever order the text uses them in, and the
// statements of a Versioned pair share one Params and so one argument
// list without sharing numbers.
type Params []string

// namedQuery is a group of SQL's statements that take one argument list:
// a single query, a Versioned pair, or the statements of EventInsert.
type namedQuery struct {
	name   string    // the field(s), for errors
	texts  []*string // an empty one is a statement the dialect does not run
	params Params
	// checked: the first statement is a write that Queries sends with
	// Conn.Send's check (gone set), which an adapter may wrap in a CTE
	// of its own (see compile).
	checked bool
}

// named lists every query of s, with the Params its caller in [Queries]
// passes, in the order of the values it passes. Init compiles each of
// them; CheckSQL, which each adapter's tests run, fails on a query of SQL
// missing here.
func (s *SQL) named() []namedQuery {
	one := func(name string, q *string, p ...string) namedQuery {
		return namedQuery{name, []*string{q}, p, false}
	}
	pair := func(name string, a, b *string, p ...string) namedQuery {
		return namedQuery{name, []*string{a, b}, p, false}
	}
	checked := func(q namedQuery) namedQuery {
		q.checked = true
		return q
	}
	events := namedQuery{name: "EventInsert", params: Params{"id", "store_id", "type", "body", "created_at"}}
	for i := range s.EventInsert {
		events.texts = append(events.texts, &s.EventInsert[i])
	}
	storeAndID := []string{"store_id", "id"}
	nowLimit := []string{"now", "limit"}
	return []namedQuery{
		one("CardSessionInsert", &s.CardSessionInsert, cardSessionTable.names()...),
		one("CardSessionGet", &s.CardSessionGet, storeAndID...),
		checked(pair("CardSessionComplete", &s.CardSessionComplete, &s.CardSessionExists,
			"status", "card_id", "store_id", "id", "expected_status", "now")),
		one("CardSessionExpireDue", &s.CardSessionExpireDue, "status", "expected_status", "now"),
		one("CardSessionPurge", &s.CardSessionPurge, "before", "limit"),
		one("CardSessionPurgeDue", &s.CardSessionPurgeDue, "before"),

		one("CardInsert", &s.CardInsert, cardTable.names()...),
		one("CardGet", &s.CardGet, storeAndID...),
		checked(one("CardUpdateStatus", &s.CardUpdateStatus, "status", "store_id", "id")),
		one("CardList", &s.CardList),
		one("CardExists", &s.CardExists, "store_id", "customer_id", "id"),
		checked(one("CardDelete", &s.CardDelete, storeAndID...)),
		one("IntentErase", &s.IntentErase, "store_id", "customer_id"),
		one("CardSessionErase", &s.CardSessionErase, "store_id", "customer_id"),

		one("IntentInsert", &s.IntentInsert, intentTable.names()...),
		one("IntentGet", &s.IntentGet, storeAndID...),
		one("IntentGetByAttempt", &s.IntentGetByAttempt, "attempt_id"),
		one("CardOfIntent", &s.CardOfIntent, "store_id", "intent_id", "card_id"),
		checked(one("IntentStartAttempt", &s.IntentStartAttempt, "attempt_id", "now", "merchant_id", "reconcile_at",
			"store_id", "id", "expected_version", "card_id", "never")),
		checked(pair("IntentUpdate", &s.intentUpdate, &s.IntentExists, updateParams(&intentTable)...)),
		one("IntentList", &s.IntentList),
		one("IntentSeq", &s.IntentSeq, storeAndID...),
		one("IntentListReconcileDue", &s.IntentListReconcileDue, nowLimit...),
		one("IntentListExpireDue", &s.IntentListExpireDue, nowLimit...),
		one("IntentStatusCounts", &s.IntentStatusCounts),
		one("IntentOutcomeUnknown", &s.IntentOutcomeUnknown),

		one("AttemptCheckInsert", &s.AttemptCheckInsert, attemptCheckTable.names()...),
		one("AttemptCheckListDue", &s.AttemptCheckListDue, nowLimit...),
		one("AttemptCheckGet", &s.AttemptCheckGet, "attempt_id"),
		checked(one("AttemptCheckReschedule", &s.AttemptCheckReschedule, "attempt_id", "check_at", "checks")),
		one("AttemptCheckDelete", &s.AttemptCheckDelete, "attempt_id"),

		one("RefundInsert", &s.RefundInsert, refundTable.names()...),
		one("RefundGet", &s.RefundGet, storeAndID...),
		one("RefundGetByIntent", &s.RefundGetByIntent, "store_id", "payment_intent_id"),
		one("RefundGetByAttempt", &s.RefundGetByAttempt, "attempt_id"),
		checked(pair("RefundUpdate", &s.RefundUpdate, &s.RefundExistsForUpdate, updateParams(&refundTable)...)),
		checked(pair("RefundDelete", &s.RefundDelete, &s.RefundExists, "store_id", "id", "expected_version")),
		one("RefundList", &s.RefundList),
		one("RefundSeq", &s.RefundSeq, storeAndID...),
		one("RefundListReconcileDue", &s.RefundListReconcileDue, nowLimit...),

		one("StoreInsert", &s.StoreInsert, storeTable.names()...),
		one("StoreGet", &s.StoreGet),
		checked(pair("StoreUpdate", &s.StoreUpdate, &s.StoreExists, updateParams(&storeTable)...)),

		events,
		one("EventGet", &s.EventGet, storeAndID...),
		one("EventSeq", &s.EventSeq, storeAndID...),
		pair("DeliveryRedeliver", &s.DeliveryRedeliver, &s.DeliveryRedeliverGet, "now", "event_id", "store_id"),
		pair("DeliveryClaimDue", &s.DeliveryClaimDue, &s.DeliveryClaimDueJobs,
			"lease_token", "lease_until", "now", "per_store", "limit", "caps", "caps_more"),
		pair("DeliveryClaimEvent", &s.DeliveryClaimEvent, &s.DeliveryClaimEventJob,
			"lease_token", "lease_until", "event_id", "now"),
		one("DeliveryNextDue", &s.DeliveryNextDue),
		one("DeliveryAttemptList", &s.DeliveryAttemptList),
		one("DeliveryAttemptSeq", &s.DeliveryAttemptSeq, "store_id", "event_id", "id"),
		one("DeliveryCounts", &s.DeliveryCounts),

		one("IdempotencyGet", &s.IdempotencyGet, "store_id", "key"),
		one("IdempotencyRelease", &s.IdempotencyRelease, "store_id", "key", "lock_token"),
		one("IdempotencyUnlock", &s.IdempotencyUnlock, "store_id", "key", "lock_token", "never"),
		one("IdempotencyBegin", &s.IdempotencyBegin,
			"store_id", "key", "fingerprint", "lock_token", "locked_until", "now", "expires_at", "body"),
		checked(pair("IdempotencyComplete", &s.IdempotencyComplete, &s.IdempotencyCompleted,
			"status", "body", "store_id", "key", "lock_token")),
		checked(one("IdempotencyProgress", &s.IdempotencyProgress, "recovery_point", "object_id", "store_id", "key", "lock_token")),
		checked(one("IdempotencyProgressDone", &s.IdempotencyProgressDone,
			"recovery_point", "object_id", "status", "body", "store_id", "key", "lock_token")),
		checked(one("IdempotencyTake", &s.IdempotencyTake, "store_id", "key", "fingerprint", "lock_token",
			"locked_until", "status", "body", "now", "expires_at", "recovery_point", "object_id")),
		one("IdempotencyDeleteExpired", &s.IdempotencyDeleteExpired, nowLimit...),
		one("IdempotencyExpiredDue", &s.IdempotencyExpiredDue, "now"),

		one("RateLimitDeleteExpired", &s.RateLimitDeleteExpired, nowLimit...),
	}
}

// updateParams are the parameters of t's update.
func updateParams[R any](t *table[R]) Params {
	_, p := t.update("")
	return p
}

// compile compiles the statements of each of qs in place (see Params).
// Every @name must be one of the group's Params, and every name of its
// Params must be used by one of its statements; a Versioned write must
// not start with WITH, so that an adapter can wrap it in a CTE of its
// own to tell a row that did not qualify from a missing one, and a
// statement in a CTE cannot have one of its own.
func compile(d Dialect, qs []namedQuery) error {
	var errs []string
	for _, q := range qs {
		used := make([]bool, len(q.params))
		for i, text := range q.texts {
			if *text == "" {
				continue
			}
			out, err := compileText(d, *text, q.params, used)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", q.name, err))
				continue
			}
			if i == 0 && q.checked && startsWithWith(out) {
				errs = append(errs, fmt.Sprintf("%s: a checked write must not start with WITH: its check wraps it in a CTE", q.name))
			}
			*text = out
		}
		for i, u := range used {
			if !u && anySet(q.texts) {
				errs = append(errs, fmt.Sprintf("%s: parameter @%s is passed but not used", q.name, q.params[i]))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: SQL: %s", d.Name(), strings.Join(errs, "; "))
	}
	return nil
}

func anySet(texts []*string) bool {
	return slices.ContainsFunc(texts, func(t *string) bool { return *t != "" })
}

// startsWithWith reports whether a statement's first word is WITH.
func startsWithWith(text string) bool {
	t := strings.TrimSpace(text)
	return len(t) >= 4 && strings.EqualFold(t[:4], "with") && (len(t) == 4 || !isNameByte(t[4]))
}

// compileText replaces each @name of text by d's placeholder of its
// position in p and marks it used. It leaves string literals alone and
// refuses positional placeholders ($1, ?1, ?), which would bypass the
// names.
func compileText(d Dialect, text string, p Params, used []bool) (string, error) {
	var b strings.Builder
	b.Grow(len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\'':
			end := strings.IndexByte(text[i+1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("unterminated string literal")
			}
			b.WriteString(text[i : i+end+2])
			i += end + 1
		case c == '@' && i+1 < len(text) && isNameStart(text[i+1]):
			j := i + 1
			for j < len(text) && isNameByte(text[j]) {
				j++
			}
			name := text[i+1 : j]
			n := slices.Index(p, name)
			if n < 0 {
				return "", fmt.Errorf("parameter @%s is not among those passed (%s)", name, strings.Join(p, ", "))
			}
			used[n] = true
			b.WriteString(d.Placeholder(n + 1))
			i = j - 1
		case c == '?', c == '$' && i+1 < len(text) && text[i+1] >= '0' && text[i+1] <= '9':
			return "", fmt.Errorf("positional placeholder in %q: write @name", text[i:min(len(text), i+4)])
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameByte(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }

// valuesOf returns the VALUES list of an insert of columns: @column each.
func valuesOf(columns []string) string {
	return "@" + strings.Join(columns, ", @")
}
