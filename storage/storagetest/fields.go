package storagetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// filler sets every exported field of a record to a value no other field
// of it has, so that a column that stores or reads the wrong field shows
// in a round trip.
type filler struct{ n int }

func (f *filler) next() int { f.n++; return f.n }

func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", f.next()))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		n := f.next()
		m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", n)), reflect.ValueOf(fmt.Sprintf("m%d", n)))
		v.Set(m)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(fmt.Appendf(nil, "b%d", f.next()))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		f.fill(s.Index(0))
		f.fill(s.Index(1))
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem())
		v.Set(p)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(t0.Add(time.Duration(f.next()) * time.Second)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	default:
		panic(fmt.Sprintf("storagetest: cannot fill a %s", v.Type()))
	}
}

// filled returns a record with every field set by f, the fields keep
// sets as they are (its identity, what an update does not write).
func filled[T any](f *filler, keep func(*T)) *T {
	r := new(T)
	f.fill(reflect.ValueOf(r).Elem())
	keep(r)
	return r
}

// roundTrip writes want with write, reads it back with read, and fails t
// when what it reads differs.
func roundTrip[T any](t *testing.T, step string, want *T, write func(*T) error, read func() (*T, error)) {
	t.Helper()
	require.NoError(t, write(want), step)
	got, err := read()
	require.NoError(t, err, step)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", step, diff)
	}
}

// testFields round-trips records with every field set, each to its own
// value: a column whose value and destination disagree, or a field that
// no column stores, fails here. An update writes every field but the
// record's identity and what it never changes (its creation, an intent's
// client secret and customer, a refund's intent).
func testFields(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()
	db := newStorage(t)
	s := insertStore(t, db)
	f := &filler{}

	t.Run("PaymentIntent", func(t *testing.T) {
		pi := filled(f, func(pi *keelpay.PaymentIntent) { pi.StoreID = s.ID })
		get := func() (*keelpay.PaymentIntent, error) { return db.PaymentIntentGet(ctx, s.ID, pi.ID) }
		roundTrip(t, "insert", pi, func(pi *keelpay.PaymentIntent) error { return db.PaymentIntentInsert(ctx, pi) }, get)
		next := filled(f, func(n *keelpay.PaymentIntent) {
			n.ID, n.StoreID, n.CreatedAt, n.ClientSecret, n.Customer = pi.ID, pi.StoreID, pi.CreatedAt, pi.ClientSecret, pi.Customer
		})
		roundTrip(t, "update", next, func(n *keelpay.PaymentIntent) error { return db.PaymentIntentUpdate(ctx, n, pi.Version) }, get)
		require.Equal(t, pi.Version+1, next.Version)

		// The customer is the create's: an update does not write it.
		other := *next
		other.Customer = keelpay.Customer{ID: "cus_other", Name: "Other Name", Email: "other@example.com", Phone: "+15550000000"}
		require.NoError(t, db.PaymentIntentUpdate(ctx, &other, next.Version))
		got, err := get()
		require.NoError(t, err)
		require.Equal(t, pi.Customer, got.Customer, "an update wrote the customer")
		require.Equal(t, other.Version, got.Version)
	})

	t.Run("Refund", func(t *testing.T) {
		r := filled(f, func(r *keelpay.Refund) { r.StoreID = s.ID })
		get := func() (*keelpay.Refund, error) { return db.RefundGet(ctx, s.ID, r.ID) }
		roundTrip(t, "insert", r, func(r *keelpay.Refund) error { return db.RefundInsert(ctx, r) }, get)
		next := filled(f, func(n *keelpay.Refund) {
			n.ID, n.StoreID, n.PaymentIntentID, n.CreatedAt = r.ID, r.StoreID, r.PaymentIntentID, r.CreatedAt
		})
		roundTrip(t, "update", next, func(n *keelpay.Refund) error { return db.RefundUpdate(ctx, n, r.Version) }, get)
	})

	t.Run("Store", func(t *testing.T) {
		st := filled(f, func(*keelpay.Store) {})
		get := func() (*keelpay.Store, error) { return db.StoreGetByID(ctx, st.ID) }
		roundTrip(t, "insert", st, func(st *keelpay.Store) error { return db.StoreInsert(ctx, st) }, get)
		next := filled(f, func(n *keelpay.Store) { n.ID, n.CreatedAt = st.ID, st.CreatedAt })
		roundTrip(t, "update", next, func(n *keelpay.Store) error { return db.StoreUpdate(ctx, n, st.Version) }, get)
	})

	t.Run("CardSession", func(t *testing.T) {
		cs := filled(f, func(cs *keelpay.CardSession) { cs.StoreID = s.ID })
		roundTrip(t, "insert", cs, func(cs *keelpay.CardSession) error { return db.CardSessionInsert(ctx, cs) },
			func() (*keelpay.CardSession, error) { return db.CardSessionGet(ctx, s.ID, cs.ID) })
	})

	t.Run("Card", func(t *testing.T) {
		c := filled(f, func(c *keelpay.Card) { c.StoreID = s.ID })
		roundTrip(t, "insert", c, func(c *keelpay.Card) error { return db.CardInsert(ctx, c) },
			func() (*keelpay.Card, error) { return db.CardGet(ctx, s.ID, c.ID) })
	})

	t.Run("AttemptCheck", func(t *testing.T) {
		a := filled(f, func(a *storage.AttemptCheck) { a.StoreID = s.ID })
		roundTrip(t, "insert", a, func(a *storage.AttemptCheck) error { return db.AttemptCheckInsert(ctx, a) },
			func() (*storage.AttemptCheck, error) { return db.AttemptCheckGet(ctx, a.AttemptID) })
	})
}
