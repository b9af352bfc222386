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

// testFields round-trips records with every field set, each to its own
// value: a column whose value and destination disagree, or a field that
// no column stores, fails here.
func testFields(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()
	db := newStorage(t)
	s := insertStore(t, db)
	f := &filler{}

	t.Run("PaymentIntent", func(t *testing.T) {
		pi := filled(f, func(pi *keelpay.PaymentIntent) { pi.StoreID = s.ID })
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		got, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(pi, got); diff != "" {
			t.Errorf("insert, get (-want +got):\n%s", diff)
		}
		// An update writes every field but the intent's identity, its
		// creation and its client secret.
		next := filled(f, func(n *keelpay.PaymentIntent) {
			n.ID, n.StoreID, n.CreatedAt, n.ClientSecret = pi.ID, pi.StoreID, pi.CreatedAt, pi.ClientSecret
		})
		expected := pi.Version
		require.NoError(t, db.PaymentIntentUpdate(ctx, next, expected))
		require.Equal(t, expected+1, next.Version)
		got, err = db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(next, got); diff != "" {
			t.Errorf("update, get (-want +got):\n%s", diff)
		}
	})

	t.Run("Refund", func(t *testing.T) {
		r := filled(f, func(r *keelpay.Refund) { r.StoreID = s.ID })
		require.NoError(t, db.RefundInsert(ctx, r))
		got, err := db.RefundGet(ctx, s.ID, r.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("insert, get (-want +got):\n%s", diff)
		}
		next := filled(f, func(n *keelpay.Refund) {
			n.ID, n.StoreID, n.PaymentIntentID, n.CreatedAt = r.ID, r.StoreID, r.PaymentIntentID, r.CreatedAt
		})
		expected := r.Version
		require.NoError(t, db.RefundUpdate(ctx, next, expected))
		got, err = db.RefundGet(ctx, s.ID, r.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(next, got); diff != "" {
			t.Errorf("update, get (-want +got):\n%s", diff)
		}
	})

	t.Run("Store", func(t *testing.T) {
		st := filled(f, func(*keelpay.Store) {})
		require.NoError(t, db.StoreInsert(ctx, st))
		got, err := db.StoreGetByID(ctx, st.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(st, got); diff != "" {
			t.Errorf("insert, get (-want +got):\n%s", diff)
		}
		next := filled(f, func(n *keelpay.Store) { n.ID, n.CreatedAt = st.ID, st.CreatedAt })
		expected := st.Version
		require.NoError(t, db.StoreUpdate(ctx, next, expected))
		got, err = db.StoreGetByID(ctx, st.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(next, got); diff != "" {
			t.Errorf("update, get (-want +got):\n%s", diff)
		}
	})

	t.Run("CardSession", func(t *testing.T) {
		cs := filled(f, func(cs *keelpay.CardSession) { cs.StoreID = s.ID })
		require.NoError(t, db.CardSessionInsert(ctx, cs))
		got, err := db.CardSessionGet(ctx, s.ID, cs.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(cs, got); diff != "" {
			t.Errorf("insert, get (-want +got):\n%s", diff)
		}
	})

	t.Run("Card", func(t *testing.T) {
		c := filled(f, func(c *keelpay.Card) { c.StoreID = s.ID })
		require.NoError(t, db.CardInsert(ctx, c))
		got, err := db.CardGet(ctx, s.ID, c.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(c, got); diff != "" {
			t.Errorf("insert, get (-want +got):\n%s", diff)
		}
	})
}
