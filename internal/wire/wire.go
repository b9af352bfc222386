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
//
// It splits the object itself rather than through json.Decoder's Token,
// which allocates a token for every key and a syntax error for every
// value followed by another byte (its probe for the end of a top-level
// value): that was a third of the allocations of a payment. It judges as
// the Decoder did, member by member in body order: a key, then its value
// (each valid JSON by json.Valid), then the duplicate, so the first
// failure is the same one; each raw value is a slice of data.
func parseObject(data []byte, prefix string) (*Object, error) {
	if !utf8.Valid(data) {
		return nil, ErrInvalidJSON()
	}
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return nil, ErrInvalidJSON()
	}
	o := &Object{prefix: prefix, vals: map[string]json.RawMessage{}}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		i++
	} else {
		for {
			if i == len(data) || data[i] != '"' {
				return nil, ErrInvalidJSON()
			}
			j := stringEnd(data, i)
			if j < 0 {
				return nil, ErrInvalidJSON()
			}
			key, ok := unquote(data[i:j])
			if !ok {
				return nil, ErrInvalidJSON()
			}
			i = skipSpace(data, j)
			if i == len(data) || data[i] != ':' {
				return nil, ErrInvalidJSON()
			}
			i = skipSpace(data, i+1)
			j = valueEnd(data, i)
			if j < 0 || !json.Valid(data[i:j]) {
				return nil, ErrInvalidJSON()
			}
			if _, dup := o.vals[key]; dup {
				return nil, keelpay.InvalidRequest(prefix+key, "duplicate_field", "A field appears more than once.")
			}
			o.keys = append(o.keys, key)
			o.vals[key] = json.RawMessage(data[i:j:j])
			i = skipSpace(data, j)
			if i == len(data) {
				return nil, ErrInvalidJSON()
			}
			if data[i] == '}' {
				i++
				break
			}
			if data[i] != ',' {
				return nil, ErrInvalidJSON()
			}
			i = skipSpace(data, i+1)
		}
	}
	if skipSpace(data, i) != len(data) {
		return nil, ErrInvalidJSON()
	}
	return o, nil
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just after the string that starts with the
// quote at i, or -1 if it does not end. What is between the quotes is
// left to json.Valid or unquote.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// valueEnd returns the index just after the JSON value that starts at i
// (only its extent: json.Valid judges it), or -1.
func valueEnd(data []byte, i int) int {
	if i == len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				j := stringEnd(data, i)
				if j < 0 {
					return -1
				}
				i = j - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	for _, w := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(data[i:], []byte(w)) {
			return i + len(w)
		}
	}
	return numberEnd(data, i)
}

// numberEnd returns the index just after the longest JSON number at i, or
// -1 if none starts there: where json.Decoder's scanner ends the value
// (what follows, "0" in "00", is then the object's to judge).
func numberEnd(data []byte, i int) int {
	digits := func(i int) int {
		for i < len(data) && '0' <= data[i] && data[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i == len(data):
		return -1
	case data[i] == '0':
		i++
	case '1' <= data[i] && data[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// unquote decodes a JSON string token (its quotes included): without
// escapes or control characters it is the bytes between the quotes.
func unquote(tok []byte) (string, bool) {
	plain := true
	for _, c := range tok[1 : len(tok)-1] {
		if c == '\\' || c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		return string(tok[1 : len(tok)-1]), true
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", false
	}
	return s, true
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
