package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
)

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

// The hand-written rendering says what encoding/json says, byte for byte,
// of intents with every field set and with none of the optional ones.
func TestIntentJSONMatchesEncodingJSON(t *testing.T) {
	full := payments.NewIntentObject(fullIntent(), true)
	// Every field of the wire form is set here, so a field added to it
	// fails this test until appendIntent writes it.
	v := reflect.ValueOf(full).Elem()
	for i := range v.NumField() {
		require.False(t, v.Field(i).IsZero(), "field %s is not set in the fixture", v.Type().Field(i).Name)
	}
	bare := &keelpay.PaymentIntent{ID: "pi_2", Status: keelpay.IntentRequiresPaymentMethod, Currency: "EUR",
		Customer: keelpay.Customer{ID: "cus_2"}, ExpiresAt: time.Unix(0, 0), CreatedAt: time.Unix(0, 0)}
	cases := map[string]*payments.IntentObject{
		"every field":          full,
		"the browser's view":   payments.NewIntentObject(fullIntent(), false),
		"no optional field":    payments.NewIntentObject(bare, true),
		"nil metadata, origin": {ID: "pi_3", Metadata: nil, PageOrigins: nil},
		"many metadata keys": {Metadata: map[string]string{"k01": "", "k02": "", "k03": "", "k04": "", "k05": "", "k06": "",
			"k07": "", "k08": "", "k09": "", "k10": "", "k11": "", "k12": "", "k13": "", "k14": "", "k15": "", "k16": "",
			"k17": "", "k18": "", "k19": "", "k20": ""}},
	}
	for name, o := range cases {
		want, err := json.Marshal(o)
		require.NoError(t, err)
		require.Equal(t, string(want), string(o.AppendJSON(nil)), name)
	}
}

// AppendIntentJSON, which renders the intent without building its wire
// object, writes what encoding/json writes of the wire object, for the
// secret key's view and the browser's.
func TestAppendIntentJSONMatchesTheWireObject(t *testing.T) {
	zero := time.Unix(0, 0)
	pending := fullIntent()
	pending.Status = keelpay.IntentProcessing // the reason marks a cancel in progress
	cases := map[string]*keelpay.PaymentIntent{
		"every field": fullIntent(),
		"no optional field": {ID: "pi_2", Status: keelpay.IntentRequiresPaymentMethod, Currency: "EUR",
			Customer: keelpay.Customer{ID: "cus_2"}, ExpiresAt: zero, CreatedAt: zero},
		"a reason while not canceled": pending,
		"empty metadata and origins": {ID: "pi_3", Metadata: map[string]string{}, PageOrigins: []string{},
			Customer: keelpay.Customer{ID: "cus_3", Email: "e@x.example"}, SucceededAt: zero.Add(time.Second)},
		"the zero intent": {},
	}
	for name, pi := range cases {
		for _, personal := range []bool{true, false} {
			want, err := json.Marshal(payments.NewIntentObject(pi, personal))
			require.NoError(t, err)
			require.Equal(t, string(want), string(payments.AppendIntentJSON(nil, pi, personal)), "%s, personal %v", name, personal)
			list := payments.IntentListJSON([]*keelpay.PaymentIntent{pi, pi}, true, personal)
			require.Equal(t, `{"object":"list","data":[`+string(want)+","+string(want)+`],"has_more":true}`, string(list))
		}
	}
}

// writeRendered sends an intent as the same response as before it had its own
// path: the body, a newline, and its headers.
func TestWriteIntent(t *testing.T) {
	o := payments.NewIntentObject(fullIntent(), true)
	want, err := json.Marshal(o)
	require.NoError(t, err)
	for range 3 { // buffers come back from the pool
		rec := httptest.NewRecorder()
		writeRendered(rec, 201, fullIntent(), true)
		require.Equal(t, 201, rec.Code)
		require.Equal(t, string(want)+"\n", rec.Body.String())
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.Equal(t, len(want)+1, int(rec.Result().ContentLength))
	}
}

func FuzzIntentJSON(f *testing.F) {
	f.Add("Åsa <b>", "line\n\u2028", "k", "\xff\x01", "https://a.example")
	f.Fuzz(func(t *testing.T, name, description, key, value, origin string) {
		pi := fullIntent()
		pi.Customer.Name, pi.Description, pi.Metadata = name, description, map[string]string{key: value, "z": name}
		pi.PageOrigins = []string{origin}
		for _, personal := range []bool{true, false} {
			o := payments.NewIntentObject(pi, personal)
			want, err := json.Marshal(o)
			require.NoError(t, err)
			require.Equal(t, string(want), string(o.AppendJSON(nil)))
			require.Equal(t, string(want), string(payments.AppendIntentJSON(nil, pi, personal)))
		}
	})
}

// The answer of GET /v1/payment_intents/{id}: the wire form built and
// encoded, as encoding/json did it and as it is done now.
func BenchmarkIntentJSON(b *testing.B) {
	pi := &keelpay.PaymentIntent{ID: "pi_GwdqTYQPJbLMlUIpLeMcDYQX", Status: keelpay.IntentSucceeded, Amount: 2500, Currency: "EUR",
		Customer:     keelpay.Customer{ID: "cus_bench", Name: "Bench Buyer", Email: "bench@shop.example", Phone: "+358401234567"},
		ClientSecret: "pi_GwdqTYQPJbLMlUIpLeMcDYQX_secret_w9VrFZigzzCntwF6GKfhEDs8", CardID: "card_i0Yfo6YuTx1XpSLNizvHbkj6",
		PaymentMethod:     &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035, Saved: true},
		AuthorizationCode: "O4B59W", OrderID: "ord_IkWJuEqyxz39NQZVtzf2gRT9",
		SucceededAt: time.Now(), ExpiresAt: time.Now().Add(24 * time.Hour), CreatedAt: time.Now()}
	w := discard{h: map[string][]string{}}
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writeJSON(w, 200, payments.NewIntentObject(pi, true))
		}
	})
	b.Run("appendIntent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			writeRendered(w, 200, pi, true)
		}
	})
}

// discard is a ResponseWriter that keeps nothing but its headers.
type discard struct{ h map[string][]string }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

// writeRaw's Content-Length is the body's length and its newline, for
// lengths it has made before and lengths it makes once per answer.
func TestWriteRawContentLength(t *testing.T) {
	for _, n := range []int{0, 1, 9, 99, 100, 8189, 8190, 8191, 8192, 20000} {
		for range 2 {
			rec := httptest.NewRecorder()
			writeRaw(rec, http.StatusOK, bytes.Repeat([]byte("x"), n))
			require.Equal(t, []string{strconv.Itoa(n + 1)}, rec.Header()["Content-Length"])
			require.Equal(t, []string{"application/json"}, rec.Header()["Content-Type"])
			require.Equal(t, n+1, rec.Body.Len())
			// A handler adding a value does not change the next answer's.
			rec.Header().Add("Content-Type", "text/plain")
			rec.Header().Add("Content-Length", "0")
		}
	}
}
