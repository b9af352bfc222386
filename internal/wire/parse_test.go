package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/keelpay/keelpay"
)

// decoderParse is parseObject as it was, through json.Decoder's Token: the
// reference parseObject must agree with on every body.
func decoderParse(data []byte, prefix string) (*Object, error) {
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

var parseCases = []string{
	`{}`, ` { } `, "\t{\n}\r\n", `{"a":1}`, `{"a":1,"b":"x"}`, `{ "a" : 1 , "b" : [1, {"c":"}"}] }`,
	`{"a":{"b":{"c":[]}},"d":null,"e":true,"f":false,"g":-1.5e3}`,
	`{"a\u0062":1}`, `{"a\"b":"c\\"}`, `{"a":"\u00e9\n"}`, `{"é":1}`,
	`{"a":1,"a":2}`, `{"a":1,"a":}`, `{"a":1,"a":2,}`, `{"a":{"x":1,"x":2}}`, `{"a":1,"a":2} x`,
	``, ` `, `[]`, `1`, `"a"`, `null`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,}`, `{"a":1 "b":2}`,
	`{"a":1}{}`, `{"a":1} {}`, `{"a":1}x`, `{"a":tru}`, `{"a":truee}`, `{"a":01}`, `{"a":1:2}`,
	`{"a":[1,2}`, `{"a":{"b":1]}`, `{"a":"x}`, `{"a":"\x"}`, `{"\x":1}`, "{\"a\x01\":1}", "{\"a\":\"\x01\"}",
	`{a:1}`, `{'a':1}`, `{"a":1}}`, `{"a":[}`, `{"a":"\ud800"}`, `{"a": 1 }`, `{"a":-}`, `{"a":1.}`,
	`{"a":[1,]}`, `{"a":{"b":}}`, `{"a":"b" ,"c":"d"}`, "{\"a\":1}\x00", `{"":1}`, `{"a":{}}`, `{"a":[]}`,
	"\xff", `{"a":"` + "\xc3\x28" + `"}`, `{"a":1,"b":[1,2,3],"a":[}`, `{"a":0,"a":00`, `{"a":true,"a":truex`, `{"a":1,"a":1.5e+3x`, `{"a":00}`,
}

func TestParseObjectAgreesWithDecoder(t *testing.T) {
	for _, c := range parseCases {
		check(t, []byte(c))
	}
}

func FuzzParseObject(f *testing.F) {
	for _, c := range parseCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

func check(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := parseObject(data, "p.")
	want, wantErr := decoderParse(data, "p.")
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("%q: error %v, the Decoder's %v", data, gotErr, wantErr)
	}
	if gotErr != nil {
		var g, w *keelpay.Error
		if !errors.As(gotErr, &g) || !errors.As(wantErr, &w) || !reflect.DeepEqual(g, w) {
			t.Fatalf("%q: error %#v, the Decoder's %#v", data, gotErr, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got.keys, want.keys) || len(got.vals) != len(want.vals) {
		t.Fatalf("%q: keys %q, the Decoder's %q", data, got.keys, want.keys)
	}
	for k, v := range want.vals {
		if !bytes.Equal(got.vals[k], v) {
			t.Fatalf("%q: %s is %q, the Decoder's %q", data, k, got.vals[k], v)
		}
	}
}

// The body of bench/pay.lua's create.
var payBody = []byte(`{"amount":2500,"currency":"EUR","customer":{"id":"cus_bench","name":"Bench Buyer",` +
	`"email":"bench@shop.example","phone":"+358401234567"},"payment_method":"card_0123456789abcdef"}`)

func BenchmarkParseObject(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseObject(payBody, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseObjectDecoder(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decoderParse(payBody, ""); err != nil {
			b.Fatal(err)
		}
	}
}
