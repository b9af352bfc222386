package render

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the renderings")

// fullIntent is an intent with every field of its wire form set, and text
// that needs escaping.
func fullIntent() *keelpay.PaymentIntent {
	at := time.Date(2026, 11, 22, 21, 30, 5, 123, time.FixedZone("x", 3600))
	return &keelpay.PaymentIntent{
		ID: "pi_1", StoreID: "store_1", Status: keelpay.IntentCanceled, Amount: 123456789, Currency: "EUR",
		Customer:    keelpay.Customer{ID: "cus_<1>", Name: "Åsa \"Q\" Ñúñez & Co", Email: "a@b.example", Phone: "+358 40\t1"},
		Description: "line\nbreak \u2028 \x01 \\ é", Reference: "ref/1", Metadata: map[string]string{"b": "2", "a": "<1>", "ä": "\xff"},
		Billing:      &keelpay.Billing{Country: "FI", State: "Uusimaa", PostalCode: "00100"},
		PageOrigins:  []string{"https://shop.example", "http://localhost:9100"},
		ClientSecret: "pi_1_secret_x", CardID: "card_1",
		PaymentMethod:     &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035, Saved: true},
		AuthorizationCode: "A1B2C3", OrderID: "ord_1", RefundID: "re_1",
		LastError:          &keelpay.LastError{Code: "card_declined", DeclineCode: "insufficient_funds", Message: "Declined."},
		NextAction:         &keelpay.NextAction{Type: "redirect_to_url", URL: "https://p.example/3ds?a=1&b=2"},
		CancellationReason: "requested_by_customer",
		VoidedCharges: []keelpay.VoidedCharge{
			{AttemptID: "att_1", Amount: 123456789, Currency: "EUR", VoidedAt: at},
			{AttemptID: "att_<2>", Amount: 1, Currency: "EUR", Status: keelpay.VoidHeld, VoidedAt: at.Add(time.Minute)},
			{AttemptID: "att_3", Amount: 2, Currency: "USD", Status: keelpay.VoidNotHeld},
		},
		SucceededAt: at, ExpiresAt: at.Add(time.Hour), CreatedAt: at, UpdatedAt: at,
	}
}

// intentCases are the intents whose renderings testdata/golden.json
// holds.
func intentCases() map[string]*keelpay.PaymentIntent {
	zero := time.Unix(0, 0)
	pending := fullIntent()
	pending.Status = keelpay.IntentProcessing // the reason marks a cancel in progress
	many := map[string]string{}
	for i := range 20 {
		many["k"+strconv.Itoa(i+10)] = ""
	}
	return map[string]*keelpay.PaymentIntent{
		"every field": fullIntent(),
		"no optional field": {ID: "pi_2", Status: keelpay.IntentRequiresPaymentMethod, Currency: "EUR",
			Customer: keelpay.Customer{ID: "cus_2"}, ExpiresAt: zero, CreatedAt: zero},
		"a reason while not canceled": pending,
		"empty metadata and origins": {ID: "pi_3", Metadata: map[string]string{}, PageOrigins: []string{},
			Customer: keelpay.Customer{ID: "cus_3", Email: "e@x.example"}, SucceededAt: zero.Add(time.Second)},
		"many metadata keys": {ID: "pi_4", Metadata: many},
		"the zero intent":    {},
	}
}

// renderings are every rendering the golden file holds, by name.
func renderings() map[string]string {
	out := map[string]string{}
	at := time.Date(2026, 11, 22, 21, 30, 5, 0, time.UTC)
	for name, pi := range intentCases() {
		for _, personal := range []bool{true, false} {
			key := name + ", personal " + strconv.FormatBool(personal)
			out["intent: "+key] = string(AppendIntent(nil, pi, personal))
			out["intent list: "+key] = string(IntentList([]*keelpay.PaymentIntent{pi, pi}, true, personal))
		}
	}
	cs := &keelpay.CardSession{ID: "cs_1", StoreID: "store_1", ClientSecret: "cs_1_secret", Customer: fullIntent().Customer,
		PageOrigins: []string{"https://shop.example"}, Status: keelpay.CardSessionCompleted, CardID: "card_1", ExpiresAt: at, CreatedAt: at}
	for _, personal := range []bool{true, false} {
		out["card session, personal "+strconv.FormatBool(personal)] = string(CardSession(cs, personal))
	}
	out["card session, bare"] = string(CardSession(&keelpay.CardSession{}, true))
	card := &keelpay.Card{ID: "card_1", StoreID: "store_1", CustomerID: "cus_1", CardSessionID: "cs_1", Brand: "visa", Last4: "4242",
		ExpMonth: 12, ExpYear: 2035, Status: keelpay.CardActive, CreatedAt: at}
	out["card"] = string(Card(card))
	out["card list"] = string(CardList([]*keelpay.Card{card, card}, false))
	out["card list, empty"] = string(CardList(nil, true))
	out["refund"] = string(Refund(&keelpay.Refund{ID: "re_1", StoreID: "store_1", PaymentIntentID: "pi_1", Amount: 5, Currency: "EUR",
		Reason: "r<1>", Metadata: map[string]string{"a": "b"}, Status: keelpay.RefundSucceeded, Attempts: 2,
		LastError: &keelpay.LastError{Code: "x", Message: "y"}, SucceededAt: at, CreatedAt: at}))
	out["refund, bare"] = string(Refund(&keelpay.Refund{}))
	st := &keelpay.Store{ID: "store_1", Currency: "EUR", PublishableKey: "pk_1", WebhookURL: "https://shop.example/hook"}
	out["setup, issued"] = string(Setup(st, "sk_1", "whsec_1"))
	out["setup, nothing issued"] = string(Setup(st, "", ""))
	out["redelivery"] = string(Redelivery(3, ""))
	out["redelivery, more"] = string(Redelivery(10000, "evt_1"))
	return out
}

// Each rendering is byte for byte the one testdata/golden.json holds:
// the bytes clients, stored answers and events have had.
func TestRenderingsMatchGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden.json")
	got := renderings()
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var want map[string]string
	require.NoError(t, json.Unmarshal(raw, &want))
	require.Equal(t, len(want), len(got))
	for name, w := range want {
		require.Equal(t, w, got[name], name)
		require.True(t, json.Valid([]byte(got[name])), name)
	}
}

// notOnWire are the fields of keelpay.PaymentIntent that its rendering
// does not show: bookkeeping of the store and the payment machine.
var notOnWire = []string{"StoreID", "AttemptID", "MerchantID", "AttemptAt", "ReconcileAt", "ReconcileCount", "UpdatedAt", "Version"}

// TestIntentFieldsAndSchema: every exported field of keelpay.PaymentIntent
// is rendered (setting it changes the rendering) or listed in notOnWire
// (setting it changes nothing), and the rendering of an intent with every
// field set has exactly the properties of docs/openapi.json's
// PaymentIntent. A field added to the intent fails here until it is
// rendered and documented, or listed.
func TestIntentFieldsAndSchema(t *testing.T) {
	full := &keelpay.PaymentIntent{}
	fill(reflect.ValueOf(full).Elem())
	// The reason is shown only once the intent is canceled.
	full.Status = keelpay.IntentCanceled
	rendered := string(AppendIntent(nil, full, true))

	typ := reflect.TypeFor[keelpay.PaymentIntent]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		without := *full
		reflect.ValueOf(&without).Elem().Field(i).SetZero()
		if f.Name == "Status" {
			without.Status = keelpay.IntentSucceeded
		}
		changed := string(AppendIntent(nil, &without, true)) != rendered
		if slices.Contains(notOnWire, f.Name) {
			require.False(t, changed, "%s is listed as not on the wire but is rendered", f.Name)
		} else {
			require.True(t, changed, "PaymentIntent.%s is not rendered: render it (and document it in docs/openapi.json), or list it in notOnWire", f.Name)
		}
	}
	for _, name := range notOnWire {
		_, ok := typ.FieldByName(name)
		require.True(t, ok, "notOnWire names %s, which PaymentIntent does not have", name)
	}
	requireSchemaKeys(t, "PaymentIntent", rendered)
}

// The other objects, rendered with every field set, have exactly the
// properties of their schemas.
func TestObjectsMatchSchemas(t *testing.T) {
	cs := &keelpay.CardSession{}
	fill(reflect.ValueOf(cs).Elem())
	requireSchemaKeys(t, "CardSession", string(CardSession(cs, true)))
	card := &keelpay.Card{}
	fill(reflect.ValueOf(card).Elem())
	requireSchemaKeys(t, "Card", string(Card(card)))
	r := &keelpay.Refund{}
	fill(reflect.ValueOf(r).Elem())
	requireSchemaKeys(t, "Refund", string(Refund(r)))
	st := &keelpay.Store{}
	fill(reflect.ValueOf(st).Elem())
	requireSchemaKeys(t, "Store", string(Setup(st, "sk", "whsec")))
	requireSchemaKeys(t, "Redelivery", string(Redelivery(1, "evt_1")))
}

// requireSchemaKeys checks that the top-level keys of the JSON object
// rendered are the properties of docs/openapi.json's schema name.
func requireSchemaKeys(t *testing.T, name, rendered string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.json"))
	require.NoError(t, err)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	schema, ok := doc.Components.Schemas[name]
	require.True(t, ok, "docs/openapi.json has no schema %s", name)
	var obj map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(rendered), &obj), rendered)
	require.Equal(t, sortedKeys(schema.Properties), sortedKeys(obj), "%s: schema properties vs rendered keys", name)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fill sets every exported field of v, recursively, to a value that is not
// its zero value.
func fill(v reflect.Value) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}
