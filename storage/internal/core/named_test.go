package core

import (
	"reflect"
	"strings"
	"testing"
)

// Every text of SQL is compiled with the parameters its caller passes:
// a query missing from SQL.named fails here, not in a payment.
func TestEveryQueryIsNamed(t *testing.T) {
	s := adapterSQL()
	if err := s.Standard(testDialect{}); err != nil {
		t.Fatal(err)
	}
	if err := CheckSQL(s); err != nil {
		t.Fatal(err)
	}
	// Every field that is a query is set, so CheckSQL saw each.
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && v.Field(i).Kind() == reflect.String && v.Field(i).String() == "" &&
			f.Name != "DeliveryRedeliver" && f.Name != "DeliveryClaimDue" && f.Name != "DeliveryClaimEvent" {
			t.Errorf("%s is empty", f.Name)
		}
	}
	// A Versioned pair shares its arguments by name: the existence check
	// of a refund's update finds the row by the update's store and id.
	if want := "SELECT 1 FROM refunds WHERE store_id = ?2 AND id = ?1"; s.RefundExistsForUpdate != want {
		t.Errorf("RefundExistsForUpdate: %s", s.RefundExistsForUpdate)
	}
}

// adapterSQL returns the queries that Standard leaves to an adapter, as
// an adapter's SQL sets them (their text aside).
func adapterSQL() *SQL {
	return &SQL{
		// The queries Standard leaves to the adapters.
		CardSessionPurge:       "DELETE FROM card_sessions WHERE expires_at < @before LIMIT @limit",
		IntentListReconcileDue: "SELECT 1 WHERE @now > 0 LIMIT @limit",
		IntentStatusCounts:     "SELECT 1", IntentOutcomeUnknown: "SELECT 1",
		RefundListReconcileDue:   "SELECT 1 WHERE @now > 0 LIMIT @limit",
		EventInsert:              []string{"INSERT INTO events VALUES (@id, @store_id, @type, @body, @created_at)"},
		DeliveryRedeliverGet:     "SELECT @now, @event_id, @store_id",
		DeliveryClaimDueJobs:     "SELECT @lease_token, @lease_until, @now, @per_store, @limit, @caps, @caps_more",
		DeliveryClaimEventJob:    "SELECT @lease_token, @lease_until, @event_id, @now",
		DeliveryNextDue:          "SELECT 1",
		DeliveryCounts:           "SELECT 1",
		IdempotencyComplete:      "UPDATE k SET status = @status, body = @body WHERE @store_id = @key AND @lock_token = ''",
		IdempotencyProgressDone:  "UPDATE k SET rp = @recovery_point, o = @object_id, s = @status, b = @body WHERE @store_id = @key AND @lock_token = ''",
		IdempotencyDeleteExpired: "DELETE FROM k WHERE e <= @now LIMIT @limit",
		RateLimitDeleteExpired:   "DELETE FROM r WHERE e <= @now LIMIT @limit",
	}
}

func TestCompileRefusesMismatches(t *testing.T) {
	for _, c := range []struct {
		name, text string
		params     Params
		checked    bool
		want       string
	}{
		{"unknown", "SELECT 1 WHERE id = @id AND x = @x", Params{"id"}, false, "@x is not among those passed"},
		{"unused", "SELECT 1 WHERE id = @id", Params{"id", "store_id"}, false, "@store_id is passed but not used"},
		{"positional", "SELECT 1 WHERE id = $1", Params{}, false, "positional placeholder"},
		{"question mark", "SELECT 1 WHERE id = ?", Params{}, false, "positional placeholder"},
		{"checked write with a CTE", "WITH e AS (SELECT 1) UPDATE t SET a = @a", Params{"a"}, true, "must not start with WITH"},
	} {
		text := c.text
		err := compile(testDialect{}, []namedQuery{{name: c.name, texts: []*string{&text}, params: c.params, checked: c.checked}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A name inside a string literal is text; a name is bound wherever
	// it appears, as often as it appears.
	text := "SELECT '@x', @a, @b, @a WHERE c::text = @b"
	if err := compile(testDialect{}, []namedQuery{{name: "ok", texts: []*string{&text}, params: Params{"b", "a"}}}); err != nil {
		t.Fatal(err)
	}
	if want := "SELECT '@x', ?2, ?1, ?2 WHERE c::text = ?1"; text != want {
		t.Errorf("compiled %q, want %q", text, want)
	}
}
