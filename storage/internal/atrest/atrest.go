// Package atrest is what the storage adapters share to keep secrets and
// customers' personal data sealed at rest: which columns are sealed, how a
// value is bound to its row, and the step at Open that seals what an older
// version left in plain text and re-seals what an older key sealed.
//
// The adapters seal on the way in and open on the way out, so services
// only ever see plaintext, and a database opened without the keyring that
// sealed it fails at Open instead of serving garbage.
package atrest

import (
	"errors"
	"fmt"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring"
)

// Column is a sealed column: its table, its name, and the columns that
// identify its row (bound into the associated data).
type Column struct {
	Table string
	Name  string
	Keys  []string
	// Blob is true for a binary column.
	Blob bool
}

// Columns are every sealed column, a table's columns next to each other
// (the step at Open reads each table once for all of them).
//
// Beside the secrets, every column that identifies a buyer is sealed: the
// customer's name, email and phone of card sessions and payment intents,
// and an intent's billing details. No query searches them: lists filter on
// the customer's id, the reference, the status and the creation time,
// which stay in clear (see docs/security.md).
var Columns = []Column{
	{Table: "stores", Name: "webhook_secret", Keys: []string{"id"}},
	{Table: "card_sessions", Name: "client_secret", Keys: []string{"id"}},
	{Table: "card_sessions", Name: "customer_name", Keys: []string{"id"}},
	{Table: "card_sessions", Name: "customer_email", Keys: []string{"id"}},
	{Table: "card_sessions", Name: "customer_phone", Keys: []string{"id"}},
	{Table: "payment_intents", Name: "client_secret", Keys: []string{"id"}},
	{Table: "payment_intents", Name: "customer_name", Keys: []string{"id"}},
	{Table: "payment_intents", Name: "customer_email", Keys: []string{"id"}},
	{Table: "payment_intents", Name: "customer_phone", Keys: []string{"id"}},
	{Table: "payment_intents", Name: "billing_country", Keys: []string{"id"}},
	{Table: "payment_intents", Name: "billing_state", Keys: []string{"id"}},
	{Table: "payment_intents", Name: "billing_postal_code", Keys: []string{"id"}},
	{Table: "idempotency_keys", Name: "body", Keys: []string{"store_id", "key"}, Blob: true},
}

// Codec seals and opens the values of the sealed columns.
type Codec struct {
	KR *keyring.Keyring
}

// ErrNoKeyring is the error of an adapter opened without a keyring.
var ErrNoKeyring = errors.New("Config.Keyring is required: keelpay keeps secrets encrypted at rest (see docs/security.md)")

// Seal seals a value of column c in the row with these key values. The
// empty value stays empty.
func (c Codec) Seal(col Column, v string, keys ...string) string {
	if v == "" {
		return ""
	}
	return c.KR.Seal([]byte(v), aad(col, keys))
}

// Open opens a value Seal made.
func (c Codec) Open(col Column, v string, keys ...string) (string, error) {
	if v == "" {
		return "", nil
	}
	b, err := c.KR.Open(v, aad(col, keys))
	if err != nil {
		// A copy of keys, so that they do not escape: a payment intent
		// read opens seven values.
		return "", fmt.Errorf("%s.%s of %v: %w", col.Table, col.Name, append([]string(nil), keys...), err)
	}
	return string(b), nil
}

// aad is keyring.AAD("keelpay", table, column, keys...), built in one
// allocation: a payment intent read opens seven sealed values.
func aad(col Column, keys []string) []byte {
	n := len(aadPrefix) + len(col.Table) + 1 + len(col.Name)
	for _, k := range keys {
		n += 1 + len(k)
	}
	b := make([]byte, 0, n)
	b = append(b, aadPrefix...)
	b = append(b, col.Table...)
	b = append(b, 0)
	b = append(b, col.Name...)
	for _, k := range keys {
		b = append(b, 0)
		b = append(b, k...)
	}
	return b
}

// aadPrefix starts the associated data of every sealed column.
const aadPrefix = "keelpay\x00"

// The sealed columns by their use.
var (
	StoreWebhookSecret    = Columns[0]
	CardSessionSecret     = Columns[1]
	CardSessionName       = Columns[2]
	CardSessionEmail      = Columns[3]
	CardSessionPhone      = Columns[4]
	IntentSecret          = Columns[5]
	IntentName            = Columns[6]
	IntentEmail           = Columns[7]
	IntentPhone           = Columns[8]
	IntentBillingCountry  = Columns[9]
	IntentBillingState    = Columns[10]
	IntentBillingPostCode = Columns[11]
	IdempotencyBody       = Columns[12]
)

// OpenStore opens the sealed fields of a store read from the database.
func (c Codec) OpenStore(s *keelpay.Store) (err error) {
	s.WebhookSecret, err = c.Open(StoreWebhookSecret, s.WebhookSecret, s.ID)
	return err
}

// OpenCardSession opens the sealed fields of a card session: its client
// secret and its customer's personal data.
func (c Codec) OpenCardSession(s *keelpay.CardSession) error {
	return c.openAll(s.ID,
		field{CardSessionSecret, &s.ClientSecret},
		field{CardSessionName, &s.Customer.Name},
		field{CardSessionEmail, &s.Customer.Email},
		field{CardSessionPhone, &s.Customer.Phone})
}

// SealCardSession returns s's sealed fields, in the order of
// OpenCardSession's: client secret, name, email, phone.
func (c Codec) SealCardSession(s *keelpay.CardSession) [4]string {
	return [4]string{
		c.Seal(CardSessionSecret, s.ClientSecret, s.ID),
		c.Seal(CardSessionName, s.Customer.Name, s.ID),
		c.Seal(CardSessionEmail, s.Customer.Email, s.ID),
		c.Seal(CardSessionPhone, s.Customer.Phone, s.ID),
	}
}

// OpenIntent opens the sealed fields of a payment intent: its client
// secret, its customer's personal data and its billing details.
func (c Codec) OpenIntent(pi *keelpay.PaymentIntent) error {
	err := c.openAll(pi.ID,
		field{IntentSecret, &pi.ClientSecret},
		field{IntentName, &pi.Customer.Name},
		field{IntentEmail, &pi.Customer.Email},
		field{IntentPhone, &pi.Customer.Phone})
	if b := pi.Billing; b != nil && err == nil {
		err = c.openAll(pi.ID,
			field{IntentBillingCountry, &b.Country},
			field{IntentBillingState, &b.State},
			field{IntentBillingPostCode, &b.PostalCode})
	}
	return err
}

// field is a sealed column and where its value is read to.
type field struct {
	col Column
	dst *string
}

// openAll opens, in place, the fields of the row with key id.
func (c Codec) openAll(id string, fields ...field) error {
	for _, f := range fields {
		v, err := c.Open(f.col, *f.dst, id)
		if err != nil {
			return err
		}
		*f.dst = v
	}
	return nil
}

// SealBody seals a stored response body; an empty body stays empty.
func (c Codec) SealBody(storeID, key string, body []byte) []byte {
	if len(body) == 0 {
		return []byte{}
	}
	return c.KR.SealBytes(body, aad(IdempotencyBody, []string{storeID, key}))
}

// OpenBody opens a body SealBody made.
func (c Codec) OpenBody(storeID, key string, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return body, nil
	}
	s, err := c.Open(IdempotencyBody, string(body), storeID, key)
	return []byte(s), err
}

// Reseal returns what the step at Open writes for a value it must (re)seal:
// plaintext an older version wrote, or a value sealed under a key that is
// no longer current. It fails when the value was sealed under a key the
// keyring does not have or that does not open it.
func (c Codec) Reseal(col Column, v string, keys ...string) (string, error) {
	if keyring.IsSealed(v) {
		plain, err := c.Open(col, v, keys...)
		if err != nil {
			return "", fmt.Errorf("the database was sealed with another key than the ones given (%w); start with the keyring it was sealed with", err)
		}
		v = plain
	}
	return c.Seal(col, v, keys...), nil
}

// CurrentPrefix is how every value sealed under the current key starts:
// values without it are pending.
func (c Codec) CurrentPrefix() string {
	return keyring.Prefix + c.KR.CurrentID() + ":"
}

// CheckTable holds one sealed check value per key id, so that a keyring
// whose key of some id is not the key the database knows under that id
// fails at Open, even before any secret was stored.
const CheckTable = "encryption_key_checks"

// CheckColumn is the sealed column of CheckTable.
var CheckColumn = Column{Table: CheckTable, Name: "sealed", Keys: []string{"key_id"}}

// CheckPlain is what a check value seals.
const CheckPlain = "keelpay encryption key check"

// Check opens the check value of key id (sealed under that key).
func (c Codec) Check(id, sealed string) error {
	got, err := c.Open(CheckColumn, sealed, id)
	if err != nil || got != CheckPlain {
		return fmt.Errorf("the key with id %q is not the key this database knows under that id; start with the keyring it was sealed with (see docs/security.md)", id)
	}
	return nil
}

// NewCheck seals the check value of key id under that key.
func (c Codec) NewCheck(id string) (string, error) {
	k, err := c.KR.Only(id)
	if err != nil {
		return "", err
	}
	return Codec{KR: k}.Seal(CheckColumn, CheckPlain, id), nil
}
