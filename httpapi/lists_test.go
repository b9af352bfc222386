package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// listIDs reads a list answer: its ids, newest first, and has_more.
func listIDs(t *testing.T, r *response) ([]string, bool) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "list", r.Body["object"])
	ids := []string{}
	for _, o := range r.Body["data"].([]any) {
		ids = append(ids, o.(map[string]any)["id"].(string))
	}
	return ids, r.Body["has_more"].(bool)
}

// walkList pages through path (a list with its filters) two at a time,
// forward with starting_after and back with ending_before, and requires
// both walks to see want.
func (b *bundle) walkList(t *testing.T, s shop, path string, want []string) {
	t.Helper()
	get := func(extra string) ([]string, bool) {
		return listIDs(t, b.do(t, req{method: "GET", path: path + "&limit=2" + extra, key: s.sk}))
	}
	var got []string
	ids, more := get("")
	got = append(got, ids...)
	for more {
		ids, more = get("&starting_after=" + got[len(got)-1])
		require.NotEmpty(t, ids)
		got = append(got, ids...)
	}
	require.Equal(t, want, append([]string{}, got...), "%s forward", path)
	if len(want) < 2 {
		return
	}
	back := []string{}
	cursor := want[len(want)-1]
	for {
		ids, more = get("&ending_before=" + cursor)
		back = append(ids, back...)
		if !more {
			break
		}
		cursor = ids[0]
	}
	require.Equal(t, want[:len(want)-1], back, "%s backward", path)
}

// A support desk finds intents by customer, status, reference and
// creation time, each alone and together, page by page.
func TestListIntentsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	other := b.shop(t, "app_other")
	start := b.clock.Now()
	type made struct {
		id, customer, reference string
		status                  keelpay.PaymentIntentStatus
		created                 time.Time
	}
	var all []made // oldest first
	for i := range 7 {
		b.clock.Advance(time.Minute)
		body := intentBody(s, 1000+i)
		cust := customerJSON()
		cust["id"] = []string{"cus_a", "cus_b"}[i%2]
		body["customer"] = cust
		ref := []string{"order-1", "order-2", "order-3"}[i%3]
		body["reference"] = ref
		r := b.createIntent(t, s, body)
		m := made{id: r.str("id"), customer: cust["id"].(string), reference: ref, status: keelpay.IntentRequiresPaymentMethod, created: b.clock.Now()}
		if i%3 == 1 {
			requireStatus(t, b.confirmNew(t, s, r, sandbox.CardVisa, nil), http.StatusOK, keelpay.IntentSucceeded)
			m.status = keelpay.IntentSucceeded
		}
		all = append(all, m)
		// Another store's intent that every filter matches.
		ob := intentBody(other, 1000)
		ob["customer"], ob["reference"] = cust, ref
		b.createIntent(t, other, ob)
	}
	want := func(keep func(m made) bool) []string {
		ids := []string{}
		for i := len(all) - 1; i >= 0; i-- {
			if keep(all[i]) {
				ids = append(ids, all[i].id)
			}
		}
		return ids
	}
	at := func(m int) string { return start.Add(time.Duration(m) * time.Minute).Format(time.RFC3339) }
	cases := []struct {
		query string
		keep  func(m made) bool
	}{
		{"", func(made) bool { return true }},
		{"customer=cus_a", func(m made) bool { return m.customer == "cus_a" }},
		{"customer=cus_nobody", func(made) bool { return false }},
		{"status=succeeded", func(m made) bool { return m.status == keelpay.IntentSucceeded }},
		{"status=requires_payment_method", func(m made) bool { return m.status == keelpay.IntentRequiresPaymentMethod }},
		{"reference=order-2", func(m made) bool { return m.reference == "order-2" }},
		{"customer=cus_b&reference=order-2", func(m made) bool { return m.customer == "cus_b" && m.reference == "order-2" }},
		{"created%5Bgte%5D=" + url.QueryEscape(at(3)), func(m made) bool { return !m.created.Before(start.Add(3 * time.Minute)) }},
		{"created[lt]=" + at(5), func(m made) bool { return m.created.Before(start.Add(5 * time.Minute)) }},
		{"status=succeeded&created[gte]=" + at(2) + "&created[lt]=" + at(7), func(m made) bool {
			return m.status == keelpay.IntentSucceeded && !m.created.Before(start.Add(2*time.Minute)) && m.created.Before(start.Add(7*time.Minute))
		}},
		{"customer=cus_a&status=requires_payment_method&reference=order-1&created[gte]=" + at(1), func(m made) bool {
			return m.customer == "cus_a" && m.status == keelpay.IntentRequiresPaymentMethod && m.reference == "order-1"
		}},
	}
	for _, c := range cases {
		b.walkList(t, s, "/v1/payment_intents?"+c.query, want(c.keep))
	}

	// A page boundary inside a filter: the page after the newest
	// succeeded intent holds only the older succeeded ones.
	succeeded := want(func(m made) bool { return m.status == keelpay.IntentSucceeded })
	require.Len(t, succeeded, 2)
	ids, more := listIDs(t, b.do(t, req{method: "GET", path: "/v1/payment_intents?status=succeeded&limit=1&starting_after=" + succeeded[0], key: s.sk}))
	require.Equal(t, succeeded[1:], ids)
	require.False(t, more)
	ids, more = listIDs(t, b.do(t, req{method: "GET", path: "/v1/payment_intents?status=succeeded&limit=1&ending_before=" + succeeded[1], key: s.sk}))
	require.Equal(t, succeeded[:1], ids)
	require.False(t, more)
}

func TestListIntentsFilterErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	for _, c := range []struct{ query, field, code string }{
		{"status=paid", "status", "invalid_status"},
		{"status=", "status", "invalid_status"},
		{"status=SUCCEEDED", "status", "invalid_status"},
		{"customer=", "customer", "invalid_customer"},
		{"reference=", "reference", "invalid_reference"},
		{"created[gte]=yesterday", "created[gte]", "invalid_created"},
		{"created[gte]=1795000000", "created[gte]", "invalid_created"},
		{"created[lt]=2026-11-21T10:00:00%2B01:00", "created[lt]", "invalid_created"},
		{"created[lt]=2026-11-21T10:00:00.5Z", "created[lt]", "invalid_created"},
		{"created[lt]=", "created[lt]", "invalid_created"},
		{"created=2026-11-21T10:00:00Z", "created", "unknown_parameter"},
		{"created[gt]=2026-11-21T10:00:00Z", "created[gt]", "unknown_parameter"},
		{"customer=cus_a&customer=cus_b", "customer", "duplicate_parameter"},
		{"status=succeeded&status=canceled", "status", "duplicate_parameter"},
		{"created[gte]=2026-11-21T10:00:00Z&created%5Bgte%5D=2026-11-21T10:00:00Z", "created[gte]", "duplicate_parameter"},
		{"customer=cus_a&starting_after=pi_nope", "starting_after", "invalid_starting_after"},
		{"status=succeeded&limit=0", "limit", "invalid_limit"},
	} {
		r := b.do(t, req{method: "GET", path: "/v1/payment_intents?" + c.query, key: s.sk})
		requireInvalid(t, r, c.field, c.code)
	}
}

// Refunds are listed newest first, by intent, status and creation time.
func TestListRefunds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	other := b.shop(t, "app_other")
	start := b.clock.Now()
	var refunds, intents []string // oldest first
	for range 3 {
		b.clock.Advance(time.Minute)
		id := b.paid(t, s, sandbox.CardVisa)
		r := b.refund(t, s, refundBody(id))
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, "succeeded", r.str("status"))
		refunds, intents = append(refunds, r.str("id")), append(intents, id)
	}
	oid := b.paid(t, other, sandbox.CardVisa)
	require.Equal(t, http.StatusCreated, b.refund(t, other, refundBody(oid)).Status)

	newest := []string{refunds[2], refunds[1], refunds[0]}
	r := b.do(t, req{method: "GET", path: "/v1/refunds", key: s.sk})
	ids, more := listIDs(t, r)
	require.Equal(t, newest, ids)
	require.False(t, more)
	first := r.Body["data"].([]any)[0].(map[string]any)
	require.Equal(t, "refund", first["object"])
	require.Equal(t, intents[2], first["payment_intent"])

	b.walkList(t, s, "/v1/refunds?status=succeeded", newest)
	b.walkList(t, s, "/v1/refunds?status=pending", []string{})
	b.walkList(t, s, "/v1/refunds?payment_intent="+intents[1], []string{refunds[1]})
	b.walkList(t, s, "/v1/refunds?payment_intent="+oid, []string{})
	at := func(m int) string { return start.Add(time.Duration(m) * time.Minute).Format(time.RFC3339) }
	b.walkList(t, s, "/v1/refunds?created[gte]="+at(2), newest[:2])
	b.walkList(t, s, "/v1/refunds?status=succeeded&created[gte]="+at(1)+"&created[lt]="+at(3), []string{refunds[1], refunds[0]})

	for _, c := range []struct{ query, field, code string }{
		{"status=refunded", "status", "invalid_status"},
		{"status=", "status", "invalid_status"},
		{"payment_intent=", "payment_intent", "invalid_payment_intent"},
		{"payment_intent=re_x", "payment_intent", "invalid_payment_intent"},
		{"created[gte]=2026-13-01T00:00:00Z", "created[gte]", "invalid_created"},
		{"customer=cus_a", "customer", "unknown_parameter"},
		{"status=pending&status=failed", "status", "duplicate_parameter"},
		{"limit=101", "limit", "invalid_limit"},
		{"starting_after=", "starting_after", "invalid_starting_after"},
		{"starting_after=" + intents[0], "starting_after", "invalid_starting_after"},
		{"ending_before=re_nope", "ending_before", "invalid_ending_before"},
		{"starting_after=" + refunds[0] + "&ending_before=" + refunds[1], "ending_before", "invalid_ending_before"},
	} {
		requireInvalid(t, b.do(t, req{method: "GET", path: "/v1/refunds?" + c.query, key: s.sk}), c.field, c.code)
	}
	// Another store's refund is not a cursor of this one.
	oref := b.do(t, req{method: "GET", path: "/v1/refunds", key: other.sk})
	oids, _ := listIDs(t, oref)
	requireInvalid(t, b.do(t, req{method: "GET", path: "/v1/refunds?starting_after=" + oids[0], key: s.sk}), "starting_after", "invalid_starting_after")
	// The secret key only.
	requireError(t, b.do(t, req{method: "GET", path: "/v1/refunds", key: s.pk}), http.StatusUnauthorized, "invalid_api_key")
}
