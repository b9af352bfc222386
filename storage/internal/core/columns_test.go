package core

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// fieldAddrs maps the address of every leaf field of v (a struct, walked
// into its struct fields but time.Time) to its path. A pointer to a struct
// is walked in part, the field of the row that holds it (intentRow's
// billing for PaymentIntent.Billing).
func fieldAddrs(v reflect.Value, path string, part func(reflect.Type) reflect.Value, out map[uintptr]string) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		fv, p := v.Field(i), path+f.Name
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]():
			fieldAddrs(fv, p+".", part, out)
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && part != nil:
			fieldAddrs(part(f.Type.Elem()), p+".", nil, out)
		default:
			out[fv.Addr().Pointer()] = p
		}
	}
}

// checkStored fails t when a field of the record in row (found by
// reflection, recursing into its parts) is neither stored by a column
// of tb nor in notStored, or when two columns store one field.
func checkStored[R any](t *testing.T, tb *table[R], row *R, record reflect.Value, part func(reflect.Type) reflect.Value, notStored []string) {
	t.Helper()
	fields := map[uintptr]string{}
	fieldAddrs(record, "", part, fields)
	stored := map[uintptr]string{}
	for _, c := range tb.cols {
		p := reflect.ValueOf(c.field(row)).Pointer()
		if other, dup := stored[p]; dup {
			t.Errorf("columns %s and %s store one field", other, c.name)
		}
		stored[p] = c.name
		if _, ok := fields[p]; !ok {
			t.Errorf("column %s stores no exported field", c.name)
		}
	}
	for addr, path := range fields {
		if _, ok := stored[addr]; !ok && !slices.Contains(notStored, path) {
			t.Errorf("field %s is stored by no column and not listed as not stored", path)
		}
	}
}

// Every exported field of a payment intent, its optional parts and its
// customer included, is stored by a column or listed as not stored.
func TestIntentFieldsStored(t *testing.T) {
	x := new(intentRow)
	rv := reflect.ValueOf(x).Elem()
	part := func(typ reflect.Type) reflect.Value {
		for i := range rv.NumField() {
			if rv.Field(i).Type() == typ {
				return rv.Field(i)
			}
		}
		t.Fatalf("intentRow has no room for a %s", typ)
		return reflect.Value{}
	}
	checkStored(t, &intentTable, x, rv.Field(0), part, intentNotStored)
}

func TestRecordFieldsStored(t *testing.T) {
	cs := new(keelpay.CardSession)
	checkStored(t, &cardSessionTable, cs, reflect.ValueOf(cs).Elem(), nil, nil)
	c := new(keelpay.Card)
	checkStored(t, &cardTable, c, reflect.ValueOf(c).Elem(), nil, nil)
	rf := new(keelpay.Refund)
	checkStored(t, &refundTable, rf, reflect.ValueOf(rf).Elem(), nil, nil)
	s := new(keelpay.Store)
	checkStored(t, &storeTable, s, reflect.ValueOf(s).Elem(), nil, nil)
	a := new(storage.AttemptCheck)
	checkStored(t, &attemptCheckTable, a, reflect.ValueOf(a).Elem(), nil, nil)
	e := new(keelpay.Event)
	checkStored(t, &eventTable, e, reflect.ValueOf(e).Elem(), nil, nil)
	da := new(keelpay.DeliveryAttempt)
	checkStored(t, &deliveryAttemptTable, da, reflect.ValueOf(da).Elem(), nil, nil)
	k := new(storage.IdempotencyRecord)
	checkStored(t, &idempotencyTable, k, reflect.ValueOf(k).Elem(), nil, nil)
}
