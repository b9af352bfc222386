package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// buyer is a customer whose every personal value is distinctive and new
// at each run, so that finding one of them at rest means it was stored.
type buyer struct {
	id, name, email, phone, state, postal, holder string
}

func newBuyer(t *testing.T) buyer {
	t.Helper()
	var nonce [5]byte
	_, err := rand.Read(nonce[:])
	require.NoError(t, err)
	x := hex.EncodeToString(nonce[:])
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	require.NoError(t, err)
	return buyer{
		id:     "cus_atrest" + x,
		name:   "Perpetua Atrestname" + x,
		email:  "perpetua." + x + "@atrest.example",
		phone:  fmt.Sprintf("+3584%09d", n.Int64()),
		state:  "Atreststate" + x,
		postal: "PC " + strings.ToUpper(x[:8]),
		holder: "Perpetua Holdername" + x,
	}
}

// personal are the values of b that must not be at rest in any form.
func (b buyer) personal() secrets {
	return secrets{"customer name": b.name, "customer email": b.email, "customer phone": b.phone,
		"billing state": b.state, "billing postal code": b.postal, "cardholder name": b.holder}
}

func (b buyer) customer() map[string]any {
	return map[string]any{"id": b.id, "name": b.name, "email": b.email, "phone": b.phone}
}

// personalTour stores everything keelpay keeps of a buyer, through the API:
// a card session and the card saved from it, an intent with the customer
// and billing paid with a new card, an intent paid with the saved card
// under an Idempotency-Key, and their webhooks delivered. It checks that
// the API still returns every personal value, and returns the store.
func personalTour(t *testing.T, bd *bundle, by buyer) shop {
	t.Helper()
	hooks := webhookstest.NewRecorder(t, "")
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	r := bd.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_personal"+hex.EncodeToString(nonce[:]), hooks.URL()+"/hooks")})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.NoError(t, hooks.SetSecrets(r.str("webhook_secret")))
	s := shop{id: r.str("id"), sk: r.str("secret_key"), pk: r.str("publishable_key"), currency: r.str("currency")}

	session := bd.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer": by.customer(), "page_origins": []string{"https://shop.example"}}})
	require.Equal(t, http.StatusCreated, session.Status, "%s", session.Raw)
	fields := cardFields(sandbox.CardMastercard)
	fields["name"], fields["client_secret"] = by.holder, session.str("client_secret")
	card := bd.do(t, req{method: "POST", path: "/v1/card_sessions/" + session.str("id") + "/cards", key: s.pk, body: fields})
	require.Equal(t, http.StatusCreated, card.Status, "%s", card.Raw)

	paid := bd.createIntent(t, s, map[string]any{"amount": 2500, "currency": s.currency, "customer": by.customer(),
		"description": "personal data at rest", "reference": "order-atrest"})
	fields = cardFields(sandbox.CardVisa)
	fields["name"], fields["client_secret"] = by.holder, paid.str("client_secret")
	fields["billing"] = map[string]any{"country": "FI", "state": by.state, "postal_code": by.postal}
	r = bd.do(t, req{method: "POST", path: "/v1/payment_intents/" + paid.str("id") + "/confirm", key: s.pk, body: fields})
	requireStatus(t, r, http.StatusOK, "succeeded")

	saved := bd.createIntent(t, s, map[string]any{"amount": 999, "currency": s.currency, "customer": by.customer()})
	r = bd.do(t, req{method: "POST", path: "/v1/payment_intents/" + saved.str("id") + "/confirm", key: s.sk,
		body: map[string]any{"payment_method": card.str("id")}, header: map[string]string{"Idempotency-Key": "confirm-saved"}})
	requireStatus(t, r, http.StatusOK, "succeeded")

	require.Positive(t, bd.runDispatcher(t, bd.dispatcher))
	delivered := hooks.Deliveries()
	require.NotEmpty(t, delivered)
	for _, d := range delivered {
		require.NoError(t, d.Err, "signature of a delivery")
	}

	// The API returns every value, opened.
	got := bd.getIntent(t, s, paid.str("id"))
	require.Equal(t, by.customer(), got.Body["customer"], "%s", got.Raw)
	require.Equal(t, map[string]any{"country": "FI", "state": by.state, "postal_code": by.postal}, got.Body["billing"], "%s", got.Raw)
	require.Equal(t, by.customer(), bd.getIntent(t, s, saved.str("id")).Body["customer"])
	list := bd.do(t, req{method: "GET", path: "/v1/payment_intents?customer=" + by.id, key: s.sk})
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Raw)
	require.Len(t, list.Body["data"], 2)
	for _, pi := range list.Body["data"].([]any) {
		require.Equal(t, by.customer(), pi.(map[string]any)["customer"], "%s", list.Raw)
	}
	cs := bd.do(t, req{method: "GET", path: "/v1/card_sessions/" + session.str("id"), key: s.sk})
	require.Equal(t, http.StatusOK, cs.Status, "%s", cs.Raw)
	require.Equal(t, by.customer(), cs.Body["customer"], "%s", cs.Raw)
	c := bd.do(t, req{method: "GET", path: "/v1/cards/" + card.str("id"), key: s.sk})
	require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
	require.Equal(t, "4444", c.str("last4"), "%s", c.Raw)
	return s
}

// eraseBuyer erases the buyer through the API and checks what the API
// shows afterwards: the customer's id, the books, no personal data.
func eraseBuyer(t *testing.T, bd *bundle, s shop, by buyer) {
	t.Helper()
	r := bd.do(t, req{method: "POST", path: "/v1/customers/" + by.id + "/erase", key: s.sk})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, 2.0, r.Body["payment_intents"], "%s", r.Raw)
	list := bd.do(t, req{method: "GET", path: "/v1/payment_intents?customer=" + by.id, key: s.sk})
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Raw)
	for _, pi := range list.Body["data"].([]any) {
		pi := pi.(map[string]any)
		require.Equal(t, map[string]any{"id": by.id}, pi["customer"], "%s", list.Raw)
		require.NotContains(t, pi, "billing")
		require.Equal(t, "succeeded", pi["status"], "the books stay")
	}
}

// erasedColumns is the SQL that counts the rows of the erased buyer that
// still hold a value, sealed or not, in a column of personal data.
const erasedColumns = `SELECT
	(SELECT count(*) FROM payment_intents WHERE customer_id = $1 AND (customer_name <> '' OR customer_email <> ''
		OR customer_phone <> '' OR billing_country <> '' OR billing_state <> '' OR billing_postal_code <> ''))
	+ (SELECT count(*) FROM card_sessions WHERE customer_id = $1 AND (customer_name <> '' OR customer_email <> '' OR customer_phone <> ''))`

// TestNoPersonalDataAtRestSQLite: after a buyer's tour, neither the SQLite
// file nor its write-ahead log holds any of the buyer's personal values,
// before a checkpoint (the recent pages are in the log) and after one
// (they are in the file), while the values that stay in clear are there.
func TestNoPersonalDataAtRestSQLite(t *testing.T) {
	t.Parallel()
	bd := setup(t)
	by := newBuyer(t)
	s := personalTour(t, bd, by)

	files := func(when string) []byte {
		var all []byte
		for _, suffix := range []string{"", "-wal"} {
			data, err := os.ReadFile(bd.path + suffix)
			if os.IsNotExist(err) {
				continue
			}
			require.NoError(t, err)
			requireNothingAtRest(t, "keelpay.db"+suffix+" "+when, data, by.personal())
			all = append(all, data...)
		}
		return all
	}
	before := files("before a checkpoint")
	wal, err := os.ReadFile(bd.path + "-wal")
	require.NoError(t, err)
	require.True(t, bytes.Contains(wal, []byte(by.id)), "the log holds the tour's rows")

	raw, err := sql.Open("sqlite", "file:"+bd.path)
	require.NoError(t, err)
	defer raw.Close()
	var busy, logPages, checkpointed int
	require.NoError(t, raw.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &checkpointed))
	require.Zero(t, busy, "the checkpoint ran")
	after := files("after a checkpoint")

	// The check is able to see: the values kept in clear by design are in
	// the files, and the sealed ones are there sealed.
	for _, all := range [][]byte{before, after} {
		for _, clear := range []string{by.id, "order-atrest", "4444", "enc:v1:test:"} {
			require.True(t, bytes.Contains(all, []byte(clear)), "%q is in the files", clear)
		}
	}

	// The erasure empties the sealed columns too.
	var n int
	require.NoError(t, raw.QueryRow(erasedColumns, by.id).Scan(&n))
	require.Positive(t, n, "the buyer's rows hold sealed values")
	eraseBuyer(t, bd, s, by)
	require.NoError(t, raw.QueryRow(erasedColumns, by.id).Scan(&n))
	require.Zero(t, n, "rows of the erased buyer still hold personal data")
}

// TestNoPersonalDataAtRestPostgreSQL: after a buyer's tour, no row of any
// table of keelpay's schema, read as text, holds any of the buyer's
// personal values.
func TestNoPersonalDataAtRestPostgreSQL(t *testing.T) {
	t.Parallel()
	dsn := postgrestest.DSN(t)
	schema := postgrestest.NewSchema(t)
	bd := setup(t, func(o *options) { o.db = postgrestest.Open(t, schema) })
	by := newBuyer(t)
	s := personalTour(t, bd, by)

	all := tablesText(t, dsn, schema, func(table string, data []byte) {
		requireNothingAtRest(t, "table "+table, data, by.personal())
	})
	for _, clear := range []string{by.id, "order-atrest", "4444", "enc:v1:test:"} {
		require.True(t, bytes.Contains(all, []byte(clear)), "%q is in the tables", clear)
	}

	// The erasure empties the sealed columns too.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	var n int
	require.NoError(t, conn.QueryRow(ctx, erasedColumns, by.id).Scan(&n))
	require.Positive(t, n, "the buyer's rows hold sealed values")
	eraseBuyer(t, bd, s, by)
	require.NoError(t, conn.QueryRow(ctx, erasedColumns, by.id).Scan(&n))
	require.Zero(t, n, "rows of the erased buyer still hold personal data")
}

// tablesText reads every row of every table of schema as text
// (SELECT t::text FROM table t), gives each table's rows to check, and
// returns them all.
func tablesText(t *testing.T, dsn, schema string, check func(table string, data []byte)) []byte {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, tables, "payment_intents")
	var all []byte
	for _, table := range tables {
		ident := pgx.Identifier{schema, table}.Sanitize()
		rows, err := conn.Query(ctx, `SELECT t::text FROM `+ident+` t`)
		require.NoError(t, err)
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		data := []byte(strings.Join(texts, "\n"))
		check(table, data)
		all = append(all, data...)
	}
	return all
}
