// Package wire decodes the JSON objects of API requests strictly: keys in
// body order, each once, with values of the documented JSON types. It
// judges the shape of a request only (a wrong JSON type, a missing
// required field, an unknown or duplicate key); the value rules of each
// field are the Validate methods of the request's params, which consult
// the Form a decoder leaves so that the first failure reported is the
// first in the documented field order, whatever its kind.
package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/keelpay/keelpay"
)

// ErrInvalidJSON is the error of a body that is not one JSON object in
// UTF-8.
func ErrInvalidJSON() error {
	return keelpay.InvalidRequest("", "invalid_json", "The request body must be one JSON object in UTF-8.")
}

// Object is a JSON object decoded strictly: its keys in body order, each
// once, with raw values decoded on demand.
type Object struct {
	prefix string // "customer." for a nested object, "" at the top
	keys   []string
	vals   map[string]json.RawMessage
}

// Parse parses a request body that must be a JSON object. A nil body (an
// empty one) is an empty object when emptyOK, else invalid_json.
func Parse(body []byte, emptyOK bool) (*Object, error) {
	if body == nil {
		if emptyOK {
			return &Object{vals: map[string]json.RawMessage{}}, nil
		}
		return nil, ErrInvalidJSON()
	}
	return parseObject(body, "")
}

// parseObject decodes data as one JSON object. Duplicate keys are
// duplicate_field; anything that is not exactly one object in valid UTF-8
// is invalid_json.
func parseObject(data []byte, prefix string) (*Object, error) {
	if !utf8.Valid(data) {
		return nil, ErrInvalidJSON()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	o := &Object{prefix: prefix, vals: map[string]json.RawMessage{}}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, ErrInvalidJSON()
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, ErrInvalidJSON()
		}
		key, ok := tok.(string)
		if !ok {
			return nil, ErrInvalidJSON()
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, ErrInvalidJSON()
		}
		if _, dup := o.vals[key]; dup {
			return nil, keelpay.InvalidRequest(prefix+key, "duplicate_field", "A field appears more than once.")
		}
		o.keys = append(o.keys, key)
		o.vals[key] = raw
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, ErrInvalidJSON()
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrInvalidJSON()
	}
	return o, nil
}

// CheckUnknown reports the first key, in body order, that is not allowed.
// Names are case-sensitive.
func (o *Object) CheckUnknown(allowed ...string) error {
	for _, k := range o.keys {
		known := false
		for _, a := range allowed {
			if k == a {
				known = true
				break
			}
		}
		if !known {
			return keelpay.InvalidRequest(o.prefix+k, "unknown_field", "The request has an unknown field; see details.field.")
		}
	}
	return nil
}

// Form is what decoding a request's fields learnt besides their values:
// which fields were sent (present and not null), and the first failure of
// shape with the field in whose place it counts. A nil *Form is a request
// given as Go values: nothing was sent, nothing failed.
type Form struct {
	top  *Object // the body's object, for Present
	sent map[string]bool
	at   string
	err  error
}

// Sent reports whether field (a path such as "billing.state") was sent.
func (f *Form) Sent(field string) bool { return f != nil && f.sent[field] }

// Present reports whether the body's object has the key name, not null,
// whether or not it was decoded: a decoder stops at its first failure,
// and Sent then misses the keys after it, but which keys the body had
// still tells which form of a request it is (a card by payment_method, or
// by its own fields).
func (f *Form) Present(name string) bool {
	if f == nil {
		return false
	}
	raw, ok := f.top.vals[name]
	return ok && string(raw) != "null"
}

// ErrAt returns the shape failure that counts in field's place, or nil.
func (f *Form) ErrAt(field string) error {
	if f == nil || f.at != field {
		return nil
	}
	return f.err
}

// Err returns the first shape failure, or nil.
func (f *Form) Err() error {
	if f == nil {
		return nil
	}
	return f.err
}

// Decoder decodes the documented fields of an object in order. After the
// first failure every later call does nothing: the fields before it are
// decoded, and the failure waits in the Form for its turn.
type Decoder struct {
	o    *Object
	form *Form
}

// Decoder starts decoding o's fields.
func (o *Object) Decoder() *Decoder {
	return &Decoder{o: o, form: &Form{top: o, sent: map[string]bool{}}}
}

// Form returns what the decoder learnt.
func (d *Decoder) Form() *Form { return d.form }

// Err returns the decoder's first failure, or nil.
func (d *Decoder) Err() error { return d.form.err }

// Fail records err as the failure in the place of field name, unless the
// decoder failed already.
func (d *Decoder) Fail(name string, err error) {
	if d.form.err == nil {
		d.form.at, d.form.err = d.o.prefix+name, err
	}
}

func (d *Decoder) fail(name, kind string) {
	field := d.o.prefix + name
	msg := field + " is not valid."
	if kind == "missing" {
		msg = field + " is required."
	}
	d.Fail(name, keelpay.InvalidRequest(field, kind+"_"+name, msg))
}

// Raw returns a field's value, or false when it is absent or null (null
// counts as absent).
func (d *Decoder) Raw(name string) (json.RawMessage, bool) {
	raw, ok := d.o.vals[name]
	if !ok || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// take returns a field's value and records it as sent; an absent required
// field is missing_<name>. ok is false when there is nothing to decode.
func (d *Decoder) take(name string, required bool) (json.RawMessage, bool) {
	if d.form.err != nil {
		return nil, false
	}
	raw, ok := d.Raw(name)
	if !ok {
		if required {
			d.fail(name, "missing")
		}
		return nil, false
	}
	d.form.sent[d.o.prefix+name] = true
	return raw, true
}

// Str decodes a string field. A wrong type is invalid_<name>; a missing
// required field is missing_<name>.
func (d *Decoder) Str(name string, required bool, dst *string) {
	raw, ok := d.take(name, required)
	if !ok {
		return
	}
	if raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
		d.fail(name, "invalid")
	}
}

// Timestamp decodes an optional RFC 3339 time (such as
// "2026-11-21T10:00:00Z"); anything else is invalid_<name>.
func (d *Decoder) Timestamp(name string, dst *time.Time) {
	var s string
	raw, ok := d.take(name, false)
	if !ok {
		return
	}
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		d.fail(name, "invalid")
		return
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d.fail(name, "invalid")
		return
	}
	*dst = t.UTC()
}

// Boolean decodes an optional true/false field.
func (d *Decoder) Boolean(name string, dst *bool) {
	raw, ok := d.take(name, false)
	if !ok {
		return
	}
	switch string(raw) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		d.fail(name, "invalid")
	}
}

// Integer decodes an integer field: a JSON number without fraction or
// exponent that fits in int64. A missing required field is
// missing_<name>; anything else is invalid, the error of invalid when set,
// else invalid_<name>.
func (d *Decoder) Integer(name string, required bool, dst *int64, invalid func(field string) error) {
	raw, ok := d.take(name, required)
	if !ok {
		return
	}
	n, ok := parseInteger(raw)
	if !ok {
		if invalid != nil {
			d.Fail(name, invalid(d.o.prefix+name))
		} else {
			d.fail(name, "invalid")
		}
		return
	}
	*dst = n
}

// parseInteger reads a JSON number that is an integer written plainly (no
// fraction, exponent or leading zero) and fits in int64.
func parseInteger(raw json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || (len(raw) > 1 && raw[0] == '0') || (len(raw) > 2 && raw[0] == '-' && raw[1] == '0') {
		return 0, false
	}
	return n, true
}

// Nested decodes an object field strictly: not an object is
// invalid_<name>, its own duplicate and unknown keys (of allowed) are
// reported as <name>.<key>, in the place of name. Then decode decodes its
// fields, with failures in their own places (<name>.<field>). It reports
// whether decode ran.
func (d *Decoder) Nested(name string, required bool, allowed []string, decode func(*Decoder)) bool {
	raw, ok := d.take(name, required)
	if !ok {
		return false
	}
	if raw[0] != '{' {
		d.fail(name, "invalid")
		return false
	}
	o, err := parseObject(raw, d.o.prefix+name+".")
	if err == nil {
		err = o.CheckUnknown(allowed...)
	}
	if err != nil {
		d.Fail(name, err)
		return false
	}
	decode(&Decoder{o: o, form: d.form})
	return true
}

// StringMap decodes an optional object of string values, such as
// metadata; anything else, duplicate keys included, is the error of
// invalid. An empty object leaves *dst nil.
func (d *Decoder) StringMap(name string, dst *map[string]string, invalid func() error) {
	raw, ok := d.take(name, false)
	if !ok {
		return
	}
	if raw[0] != '{' {
		d.Fail(name, invalid())
		return
	}
	o, err := parseObject(raw, d.o.prefix+name+".")
	if err != nil {
		d.Fail(name, invalid())
		return
	}
	m := make(map[string]string, len(o.keys))
	for _, k := range o.keys {
		var v string
		if raw := o.vals[k]; raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
			d.Fail(name, invalid())
			return
		}
		m[k] = v
	}
	if len(m) > 0 {
		*dst = m
	}
}

// Strings decodes an array of strings; anything else, and a missing
// required one, is the error of invalid.
func (d *Decoder) Strings(name string, required bool, dst *[]string, invalid func() error) {
	if d.form.err != nil {
		return
	}
	if _, ok := d.Raw(name); !ok && required {
		d.Fail(name, invalid())
		return
	}
	raw, ok := d.take(name, false)
	if !ok {
		return
	}
	var list []string
	if raw[0] != '[' || json.Unmarshal(raw, &list) != nil {
		d.Fail(name, invalid())
		return
	}
	*dst = list
}
