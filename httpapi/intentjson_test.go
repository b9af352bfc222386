package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/render"
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

// writeRendered sends an intent as its rendering: the body, a newline,
// and its headers.
func TestWriteIntent(t *testing.T) {
	want := render.AppendIntent(nil, fullIntent(), true)
	for range 3 { // buffers come back from the pool
		rec := httptest.NewRecorder()
		writeRendered(rec, 201, fullIntent(), true)
		require.Equal(t, 201, rec.Code)
		require.Equal(t, string(want)+"\n", rec.Body.String())
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.Equal(t, len(want)+1, int(rec.Result().ContentLength))
	}
}

// The rendering of an intent is JSON that decodes, strictly, into the
// wire type embedders use, with each text as encoding/json carries it.
func FuzzIntentJSON(f *testing.F) {
	f.Add("Åsa <b>", "line\n\u2028", "k", "\xff\x01", "https://a.example")
	f.Fuzz(func(t *testing.T, name, description, key, value, origin string) {
		pi := fullIntent()
		pi.Customer.Name, pi.Description, pi.Metadata = name, description, map[string]string{key: value, "z": name}
		pi.PageOrigins = []string{origin}
		for _, personal := range []bool{true, false} {
			b := render.AppendIntent(nil, pi, personal)
			d := json.NewDecoder(bytes.NewReader(b))
			d.DisallowUnknownFields()
			var o payments.IntentObject
			require.NoError(t, d.Decode(&o), "%s", b)
			require.Equal(t, viaJSON(t, description), *o.Description)
			require.Equal(t, viaJSON(t, origin), o.PageOrigins[0])
			if key != "z" {
				require.Equal(t, viaJSON(t, value), o.Metadata[viaJSON(t, key)])
			}
			if personal {
				require.Equal(t, viaJSON(t, name), o.Customer.Name)
			}
		}
	})
}

// viaJSON is s as encoding/json carries it: encoded and decoded.
func viaJSON(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var out string
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// The answer of GET /v1/payment_intents/{id}.
func BenchmarkIntentJSON(b *testing.B) {
	pi := &keelpay.PaymentIntent{ID: "pi_GwdqTYQPJbLMlUIpLeMcDYQX", Status: keelpay.IntentSucceeded, Amount: 2500, Currency: "EUR",
		Customer:     keelpay.Customer{ID: "cus_bench", Name: "Bench Buyer", Email: "bench@shop.example", Phone: "+358401234567"},
		ClientSecret: "pi_GwdqTYQPJbLMlUIpLeMcDYQX_secret_w9VrFZigzzCntwF6GKfhEDs8", CardID: "card_i0Yfo6YuTx1XpSLNizvHbkj6",
		PaymentMethod:     &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035, Saved: true},
		AuthorizationCode: "O4B59W", OrderID: "ord_IkWJuEqyxz39NQZVtzf2gRT9",
		SucceededAt: time.Now(), ExpiresAt: time.Now().Add(24 * time.Hour), CreatedAt: time.Now()}
	w := discard{h: map[string][]string{}}
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
