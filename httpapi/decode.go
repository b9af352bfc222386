package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/keelpay/keelpay"
)

// MaxBodyBytes is the largest request body accepted (docs/api.md).
const MaxBodyBytes = 16 << 10

// readBody reads a request body of at most MaxBodyBytes, also when it is
// chunked, and checks its media type. An empty body is returned as nil.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, errTooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge()
		}
		return nil, keelpay.InvalidRequest("", "invalid_json", "The request body could not be read.")
	}
	ct := r.Header.Get("Content-Type")
	if len(body) == 0 && ct == "" {
		return nil, nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" || (params["charset"] != "" && !equalFoldASCII(params["charset"], "utf-8")) {
		return nil, keelpay.NewError(keelpay.CodeUnsupportedMediaType,
			"Content-Type must be application/json.")
	}
	if len(body) == 0 {
		return nil, nil
	}
	return body, nil
}

func equalFoldASCII(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

func errTooLarge() error {
	return keelpay.NewError(keelpay.CodeRequestTooLarge,
		"The request body is larger than 16 KiB.")
}

func errInvalidJSON() error {
	return keelpay.InvalidRequest("", "invalid_json", "The request body must be one JSON object in UTF-8.")
}

// object is a JSON object decoded strictly: its keys in body order, each
// once, with raw values decoded on demand.
type object struct {
	prefix string // "customer." for a nested object, "" at the top
	keys   []string
	vals   map[string]json.RawMessage
}

// parseObject decodes data as one JSON object. Duplicate keys are
// duplicate_field; anything that is not exactly one object in valid UTF-8
// is invalid_json (or, nested, invalidCode for its field).
func parseObject(data []byte, prefix string) (*object, error) {
	if !utf8.Valid(data) {
		return nil, errInvalidJSON()
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	o := &object{prefix: prefix, vals: map[string]json.RawMessage{}}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errInvalidJSON()
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errInvalidJSON()
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errInvalidJSON()
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, errInvalidJSON()
		}
		if _, dup := o.vals[key]; dup {
			return nil, keelpay.InvalidRequest(prefix+key, "duplicate_field", "A field appears more than once.")
		}
		o.keys = append(o.keys, key)
		o.vals[key] = raw
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errInvalidJSON()
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errInvalidJSON()
	}
	return o, nil
}

// parseBody parses a request body that must be a JSON object; an empty body
// is an empty object when emptyOK.
func parseBody(body []byte, emptyOK bool) (*object, error) {
	if body == nil {
		if emptyOK {
			return &object{vals: map[string]json.RawMessage{}}, nil
		}
		return nil, errInvalidJSON()
	}
	return parseObject(body, "")
}

// readObject reads and parses a request body that must be a JSON object
// (an empty body is {} when emptyOK).
func readObject(w http.ResponseWriter, r *http.Request, emptyOK bool) (*object, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	return parseBody(body, emptyOK)
}

// checkUnknown reports the first key, in body order, that is not allowed.
// Names are case-sensitive.
func (o *object) checkUnknown(allowed ...string) error {
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

// fields decodes the documented fields of an object in order, keeping the
// first failure: after one, every later call does nothing.
type fields struct {
	o   *object
	err error
}

func (o *object) fields() *fields { return &fields{o: o} }

// raw returns a field's value, or false when it is absent or null (null
// counts as absent).
func (f *fields) raw(name string) (json.RawMessage, bool) {
	raw, ok := f.o.vals[name]
	if !ok || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

func (f *fields) fail(name, kind string) {
	f.err = keelpay.InvalidRequest(f.o.prefix+name, kind+"_"+name, fieldMessage(f.o.prefix+name, kind))
}

func fieldMessage(field, kind string) string {
	if kind == "missing" {
		return field + " is required."
	}
	return field + " is not valid."
}

// check runs a value rule's error, if the decoder has not failed yet.
func (f *fields) check(err error) {
	if f.err == nil && err != nil {
		f.err = err
	}
}

// str decodes a string field. A wrong type is invalid_<name>; a missing
// required field is missing_<name>. check, when set, validates the value.
func (f *fields) str(name string, required bool, dst *string, check func(string) error) {
	if f.err != nil {
		return
	}
	raw, ok := f.raw(name)
	if !ok {
		if required {
			f.fail(name, "missing")
		}
		return
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
		f.fail(name, "invalid")
		return
	}
	if check != nil {
		f.check(check(*dst))
	}
}

// timestamp decodes an optional RFC 3339 time (such as
// "2026-11-21T10:00:00Z"); anything else is invalid_<name>.
func (f *fields) timestamp(name string, dst *time.Time) {
	var s string
	f.str(name, false, &s, nil)
	if f.err != nil || s == "" {
		if f.err == nil {
			if _, ok := f.raw(name); ok {
				f.fail(name, "invalid")
			}
		}
		return
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		f.fail(name, "invalid")
		return
	}
	*dst = t.UTC()
}

// boolean decodes an optional true/false field.
func (f *fields) boolean(name string, dst *bool) {
	if f.err != nil {
		return
	}
	raw, ok := f.raw(name)
	if !ok {
		return
	}
	switch string(raw) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		f.fail(name, "invalid")
	}
}

// integer decodes an integer field: a JSON number without fraction or
// exponent that fits in int64.
func (f *fields) integer(name string, required bool, dst *int64, check func(int64) error) {
	if f.err != nil {
		return
	}
	raw, ok := f.raw(name)
	if !ok {
		if required {
			f.fail(name, "missing")
		}
		return
	}
	n, ok := parseInteger(raw)
	if !ok {
		f.fail(name, "invalid")
		return
	}
	*dst = n
	if check != nil {
		f.check(check(n))
	}
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

// nested decodes an object field strictly (its own unknown and duplicate
// keys reported as <name>.<key>) and hands it to decode.
func (f *fields) nested(name string, required bool, decode func(o *object) error) {
	if f.err != nil {
		return
	}
	raw, ok := f.raw(name)
	if !ok {
		if required {
			f.fail(name, "missing")
		}
		return
	}
	if raw[0] != '{' {
		f.fail(name, "invalid")
		return
	}
	o, err := parseObject(raw, f.o.prefix+name+".")
	if err != nil {
		f.err = err
		return
	}
	f.check(decode(o))
}
