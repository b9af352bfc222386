package check_test

import (
	"errors"
	"testing"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/wire"
)

func form(t *testing.T, body string, decode func(*wire.Decoder)) *wire.Form {
	t.Helper()
	o, err := wire.Parse([]byte(body), false)
	if err != nil {
		t.Fatal(err)
	}
	d := o.Decoder()
	decode(d)
	return d.Form()
}

func fieldOf(err error) string {
	var ke *keelpay.Error
	if !errors.As(err, &ke) {
		return ""
	}
	s, _ := ke.Details["field"].(string)
	return s
}

// Each rule runs once, in order, and only until the first failure.
func TestFieldsRunsRulesOnceInOrder(t *testing.T) {
	var ran []string
	rule := func(name string, fail bool) func() error {
		return func() error {
			ran = append(ran, name)
			if fail {
				return keelpay.InvalidRequest(name, "invalid_"+name, name+" is not valid.")
			}
			return nil
		}
	}
	v := check.In(nil)
	v.Required("a", rule("a", false))
	v.Optional("b", true, rule("b", true)) // zero and not sent: absent
	v.Optional("c", false, rule("c", true))
	v.Required("d", rule("d", true))
	if got := fieldOf(v.Err()); got != "c" || len(ran) != 2 || ran[0] != "a" || ran[1] != "c" {
		t.Fatalf("failed at %q after %v", got, ran)
	}
}

// A shape failure counts in its field's place: after a bad value of an
// earlier field, before the rules of later ones.
func TestFieldsShapeFailureInPlace(t *testing.T) {
	var a, c string
	var b int64
	f := form(t, `{"a":"x","b":"not a number","c":""}`, func(d *wire.Decoder) {
		d.Str("a", true, &a)
		d.Integer("b", true, &b, nil)
		d.Str("c", false, &c)
	})
	bad := func() error { return keelpay.InvalidRequest("a", "invalid_a", "a is not valid.") }
	ok := func() error { return nil }

	v := check.In(f)
	v.Required("a", bad)
	v.Required("b", ok)
	if got := fieldOf(v.Err()); got != "a" {
		t.Fatalf("got %q, want a", got)
	}

	v = check.In(f)
	v.Required("a", ok)
	v.Required("b", ok)
	if got := fieldOf(v.Err()); got != "b" {
		t.Fatalf("got %q, want b", got)
	}

	// A place no rule visits still fails the request.
	v = check.In(f)
	v.Required("a", ok)
	if got := fieldOf(v.Err()); got != "b" {
		t.Fatalf("got %q, want b", got)
	}
}

// A field sent empty is judged; the same field absent is not.
func TestFieldsSentEmpty(t *testing.T) {
	var s string
	f := form(t, `{"s":""}`, func(d *wire.Decoder) { d.Str("s", false, &s) })
	judged := false
	check.In(f).Optional("s", s == "", func() error { judged = true; return nil })
	if !judged {
		t.Fatal("a field sent empty was not judged")
	}
	judged = false
	check.In(nil).Optional("s", true, func() error { judged = true; return nil })
	if judged {
		t.Fatal("an empty Go field was judged")
	}
}

// An absent required object is missing_<name>; sent empty, its fields are
// judged.
func TestFieldsObject(t *testing.T) {
	v := check.In(nil)
	if v.Object("customer", true, true) {
		t.Fatal("an absent object is to be judged")
	}
	var ke *keelpay.Error
	if !errors.As(v.Err(), &ke) || ke.Details["code"] != "missing_customer" {
		t.Fatalf("got %v", v.Err())
	}
	f := form(t, `{"customer":{}}`, func(d *wire.Decoder) { d.Nested("customer", true, nil, func(*wire.Decoder) {}) })
	if !check.In(f).Object("customer", true, true) {
		t.Fatal("an object sent empty is not judged")
	}
}
