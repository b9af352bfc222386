package atrest

import (
	"testing"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
)

// aad builds the same bytes as keyring.AAD, which sealed every value an
// earlier version stored.
func TestAADIsKeyringAAD(t *testing.T) {
	for _, col := range append(Columns, CheckColumn) {
		for _, keys := range [][]string{nil, {"pi_1"}, {"store_1", "key 2"}} {
			want := keyring.AAD(append([]string{"keelpay", col.Table, col.Name}, keys...)...)
			if got := aad(col, keys); string(got) != string(want) {
				t.Errorf("aad(%s.%s, %q) = %q, want %q", col.Table, col.Name, keys, got, want)
			}
		}
	}
}

// The CPU cost of sealing at rest, apart from the database: what a
// payment intent read opens (its client secret alone, as before personal
// data was sealed, then with its customer and billing) and what a write
// seals.
func benchIntent(b *testing.B) (Codec, *keelpay.PaymentIntent) {
	c := Codec{KR: keyringtest.Keyring()}
	pi := &keelpay.PaymentIntent{ID: "pi_4CxVbZBBWNBmxtsBDTY14DKB", ClientSecret: "pi_4CxVbZBBWNBmxtsBDTY14DKB_secret_Zk3sB0xY9qLm2Vt8",
		Customer: keelpay.Customer{ID: "cus_bench", Name: "Bench Buyer", Email: "bench@shop.example", Phone: "+358401234567"},
		Billing:  &keelpay.Billing{Country: "DE", State: "Berlin", PostalCode: "10115"}}
	return c, pi
}

func BenchmarkOpenIntentSecretOnly(b *testing.B) {
	c, pi := benchIntent(b)
	sealed := c.Seal(IntentSecret, pi.ClientSecret, pi.ID)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Open(IntentSecret, sealed, pi.ID); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenIntent(b *testing.B) {
	c, pi := benchIntent(b)
	sealed := *pi
	sealed.ClientSecret = c.Seal(IntentSecret, pi.ClientSecret, pi.ID)
	sealed.Customer.Name = c.Seal(IntentName, pi.Customer.Name, pi.ID)
	sealed.Customer.Email = c.Seal(IntentEmail, pi.Customer.Email, pi.ID)
	sealed.Customer.Phone = c.Seal(IntentPhone, pi.Customer.Phone, pi.ID)
	billing := keelpay.Billing{Country: c.Seal(IntentBillingCountry, pi.Billing.Country, pi.ID),
		State: c.Seal(IntentBillingState, pi.Billing.State, pi.ID), PostalCode: c.Seal(IntentBillingPostCode, pi.Billing.PostalCode, pi.ID)}
	b.ReportAllocs()
	for b.Loop() {
		got, gotBilling := sealed, billing
		got.Billing = &gotBilling
		if err := c.OpenIntent(&got); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSealIntentPersonal(b *testing.B) {
	c, pi := benchIntent(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Seal(IntentName, pi.Customer.Name, pi.ID)
		_ = c.Seal(IntentEmail, pi.Customer.Email, pi.ID)
		_ = c.Seal(IntentPhone, pi.Customer.Phone, pi.ID)
		_ = c.Seal(IntentBillingCountry, pi.Billing.Country, pi.ID)
		_ = c.Seal(IntentBillingState, pi.Billing.State, pi.ID)
		_ = c.Seal(IntentBillingPostCode, pi.Billing.PostalCode, pi.ID)
	}
}
