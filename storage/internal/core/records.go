package core

import (
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// Records maps keelpay's records to rows and back for one database, and
// seals and opens the secrets they keep at rest. The column lists below
// name the columns in the order of the values and destinations.
type Records struct {
	// D is the database's dialect.
	D Dialect
	// Codec seals and opens the secrets, with the keyring of the DB.
	Codec atrest.Codec
}

// Card sessions.

// cardSessionTable declares the columns of a card session.
var cardSessionTable = table[keelpay.CardSession]{
	id: func(s *keelpay.CardSession) string { return s.ID },
	cols: []column[keelpay.CardSession]{
		col("id", kText, func(s *keelpay.CardSession) any { return &s.ID }),
		col("store_id", kText, func(s *keelpay.CardSession) any { return &s.StoreID }),
		col("client_secret", kText, func(s *keelpay.CardSession) any { return &s.ClientSecret }).seal(atrest.CardSessionSecret),
		col("customer_id", kText, func(s *keelpay.CardSession) any { return &s.Customer.ID }),
		col("customer_name", kText, func(s *keelpay.CardSession) any { return &s.Customer.Name }).seal(atrest.CardSessionName),
		col("customer_email", kText, func(s *keelpay.CardSession) any { return &s.Customer.Email }).seal(atrest.CardSessionEmail),
		col("customer_phone", kText, func(s *keelpay.CardSession) any { return &s.Customer.Phone }).seal(atrest.CardSessionPhone),
		col("page_origins", kStrings, func(s *keelpay.CardSession) any { return &s.PageOrigins }),
		col("status", kText, func(s *keelpay.CardSession) any { return (*string)(&s.Status) }),
		col("card_id", kText, func(s *keelpay.CardSession) any { return &s.CardID }),
		col("expires_at", kTime, func(s *keelpay.CardSession) any { return &s.ExpiresAt }),
		col("created_at", kTime, func(s *keelpay.CardSession) any { return &s.CreatedAt }),
	},
}

// CardSessionColumns are the columns of a card session.
var CardSessionColumns = cardSessionTable.list()

// CardSessionValues returns s's values, its client secret and its
// customer's name, email and phone sealed.
func (r Records) CardSessionValues(s *keelpay.CardSession) ([]any, error) {
	return cardSessionTable.values(r, s, make([]any, 0, len(cardSessionTable.cols)), pickAll)
}

// ScanCardSession reads a card session and opens its client secret and
// its customer's personal data.
func (r Records) ScanCardSession(row Row) (*keelpay.CardSession, error) {
	var s keelpay.CardSession
	if err := cardSessionTable.scan(r, row, &s); err != nil {
		return nil, err
	}
	if len(s.PageOrigins) == 0 {
		s.PageOrigins = nil
	}
	return &s, nil
}

// Cards.

// cardTable declares the columns of a card.
var cardTable = table[keelpay.Card]{
	id: func(c *keelpay.Card) string { return c.ID },
	cols: []column[keelpay.Card]{
		col("id", kText, func(c *keelpay.Card) any { return &c.ID }),
		col("store_id", kText, func(c *keelpay.Card) any { return &c.StoreID }),
		col("customer_id", kText, func(c *keelpay.Card) any { return &c.CustomerID }),
		col("card_session_id", kText, func(c *keelpay.Card) any { return &c.CardSessionID }),
		col("provider_token", kText, func(c *keelpay.Card) any { return &c.ProviderToken }),
		col("brand", kText, func(c *keelpay.Card) any { return &c.Brand }),
		col("last4", kText, func(c *keelpay.Card) any { return &c.Last4 }),
		col("exp_month", kInt, func(c *keelpay.Card) any { return &c.ExpMonth }),
		col("exp_year", kInt, func(c *keelpay.Card) any { return &c.ExpYear }),
		col("status", kText, func(c *keelpay.Card) any { return (*string)(&c.Status) }),
		col("created_at", kTime, func(c *keelpay.Card) any { return &c.CreatedAt }),
	},
}

// CardColumns are the columns of a card.
var CardColumns = cardTable.list()

// CardValues returns c's values.
func (r Records) CardValues(c *keelpay.Card) []any {
	v, _ := cardTable.values(r, c, make([]any, 0, len(cardTable.cols)), pickAll) // no column of a card can fail
	return v
}

// ScanCard reads a card.
func (r Records) ScanCard(row Row) (*keelpay.Card, error) {
	var c keelpay.Card
	if err := cardTable.scan(r, row, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// Refunds.

// refundTable declares the columns of a refund.
var refundTable = table[keelpay.Refund]{
	id: func(rf *keelpay.Refund) string { return rf.ID },
	cols: []column[keelpay.Refund]{
		col("id", kText, func(rf *keelpay.Refund) any { return &rf.ID }).isKey(),
		col("store_id", kText, func(rf *keelpay.Refund) any { return &rf.StoreID }).isKey(),
		col("payment_intent_id", kText, func(rf *keelpay.Refund) any { return &rf.PaymentIntentID }).once(),
		col("amount", kInt64, func(rf *keelpay.Refund) any { return &rf.Amount }),
		col("currency", kText, func(rf *keelpay.Refund) any { return &rf.Currency }),
		col("reason", kText, func(rf *keelpay.Refund) any { return &rf.Reason }),
		col("metadata", kMetadata, func(rf *keelpay.Refund) any { return &rf.Metadata }),
		col("status", kText, func(rf *keelpay.Refund) any { return (*string)(&rf.Status) }),
		col("attempts", kInt, func(rf *keelpay.Refund) any { return &rf.Attempts }),
		col("attempt_id", kText, func(rf *keelpay.Refund) any { return &rf.AttemptID }),
		col("last_sent_at", kTime, func(rf *keelpay.Refund) any { return &rf.LastSentAt }),
		col("last_error", kLastError, func(rf *keelpay.Refund) any { return &rf.LastError }),
		col("reconcile_at", kTime, func(rf *keelpay.Refund) any { return &rf.ReconcileAt }),
		col("reconcile_count", kInt, func(rf *keelpay.Refund) any { return &rf.ReconcileCount }),
		col("succeeded_at", kTime, func(rf *keelpay.Refund) any { return &rf.SucceededAt }),
		col("created_at", kTime, func(rf *keelpay.Refund) any { return &rf.CreatedAt }).once(),
		col("updated_at", kTime, func(rf *keelpay.Refund) any { return &rf.UpdatedAt }),
		col("version", kInt64, func(rf *keelpay.Refund) any { return &rf.Version }),
	},
}

// RefundColumns are the columns of a refund.
var RefundColumns = refundTable.list()

// RefundValues returns rf's values.
func (r Records) RefundValues(rf *keelpay.Refund) ([]any, error) {
	return refundTable.values(r, rf, make([]any, 0, len(refundTable.cols)), pickAll)
}

// ScanRefund reads a refund. Its metadata is never nil: an empty object
// reads as an empty map.
func (r Records) ScanRefund(row Row) (*keelpay.Refund, error) {
	var rf keelpay.Refund
	if err := refundTable.scan(r, row, &rf); err != nil {
		return nil, err
	}
	if rf.Metadata == nil {
		rf.Metadata = map[string]string{}
	}
	return &rf, nil
}

// Stores.

// storeTable declares the columns of a store. The table's client_secret
// column is not among them: it is always empty.
var storeTable = table[keelpay.Store]{
	id: func(s *keelpay.Store) string { return s.ID },
	cols: []column[keelpay.Store]{
		col("id", kText, func(s *keelpay.Store) any { return &s.ID }).isKey(),
		col("client_id", kText, func(s *keelpay.Store) any { return &s.ClientID }),
		col("client_secret_hash", kText, func(s *keelpay.Store) any { return &s.ClientSecretHash }),
		col("merchant_id", kText, func(s *keelpay.Store) any { return &s.MerchantID }),
		col("currency", kText, func(s *keelpay.Store) any { return &s.Currency }),
		col("publishable_key", kText, func(s *keelpay.Store) any { return &s.PublishableKey }),
		col("secret_key_hash", kBytes, func(s *keelpay.Store) any { return &s.SecretKeyHash }),
		col("webhook_url", kText, func(s *keelpay.Store) any { return &s.WebhookURL }),
		col("webhook_secret", kText, func(s *keelpay.Store) any { return &s.WebhookSecret }).seal(atrest.StoreWebhookSecret),
		col("version", kInt64, func(s *keelpay.Store) any { return &s.Version }),
		col("created_at", kTime, func(s *keelpay.Store) any { return &s.CreatedAt }).once(),
		col("updated_at", kTime, func(s *keelpay.Store) any { return &s.UpdatedAt }),
	},
}

// StoreColumns are the columns of a store.
var StoreColumns = storeTable.list()

// StoreValues returns s's values, its webhook secret sealed.
func (r Records) StoreValues(s *keelpay.Store) []any {
	v, _ := storeTable.values(r, s, make([]any, 0, len(storeTable.cols)), pickAll) // no column of a store can fail
	return v
}

// ScanStore reads a store and opens its webhook secret.
func (r Records) ScanStore(row Row) (*keelpay.Store, error) {
	var s keelpay.Store
	if err := storeTable.scan(r, row, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Attempt checks.

// attemptCheckTable declares the columns of an attempt check.
var attemptCheckTable = table[storage.AttemptCheck]{
	id: func(c *storage.AttemptCheck) string { return c.AttemptID },
	cols: []column[storage.AttemptCheck]{
		col("attempt_id", kText, func(c *storage.AttemptCheck) any { return &c.AttemptID }),
		col("store_id", kText, func(c *storage.AttemptCheck) any { return &c.StoreID }),
		col("payment_intent_id", kText, func(c *storage.AttemptCheck) any { return &c.PaymentIntentID }),
		col("merchant_id", kText, func(c *storage.AttemptCheck) any { return &c.MerchantID }),
		col("closed_at", kTime, func(c *storage.AttemptCheck) any { return &c.ClosedAt }),
		col("check_at", kTime, func(c *storage.AttemptCheck) any { return &c.CheckAt }),
		col("until", kTime, func(c *storage.AttemptCheck) any { return &c.Until }),
		col("checks", kInt, func(c *storage.AttemptCheck) any { return &c.Checks }),
	},
}

// AttemptCheckColumns are the columns of an attempt check.
var AttemptCheckColumns = attemptCheckTable.list()

// AttemptCheckValues returns c's values.
func (r Records) AttemptCheckValues(c *storage.AttemptCheck) []any {
	v, _ := attemptCheckTable.values(r, c, make([]any, 0, len(attemptCheckTable.cols)), pickAll) // no column can fail
	return v
}

// ScanAttemptCheck reads an attempt check.
func (r Records) ScanAttemptCheck(row Row) (*storage.AttemptCheck, error) {
	var c storage.AttemptCheck
	if err := attemptCheckTable.scan(r, row, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// Events and deliveries.

// eventTable declares the columns of an event with its delivery, of
// events e joined to deliveries d: they are read, not written (an
// adapter inserts an event with its own statements, EventInsert).
var eventTable = table[keelpay.Event]{
	id: func(e *keelpay.Event) string { return e.ID },
	cols: []column[keelpay.Event]{
		col("e.id", kText, func(e *keelpay.Event) any { return &e.ID }),
		col("e.store_id", kText, func(e *keelpay.Event) any { return &e.StoreID }),
		col("e.type", kText, func(e *keelpay.Event) any { return (*string)(&e.Type) }),
		col("e.body", kBytes, func(e *keelpay.Event) any { return (*[]byte)(&e.Body) }),
		col("e.created_at", kTime, func(e *keelpay.Event) any { return &e.CreatedAt }),
		col("d.status", kText, func(e *keelpay.Event) any { return (*string)(&e.Delivery.Status) }),
		col("d.attempts", kInt, func(e *keelpay.Event) any { return &e.Delivery.Attempts }),
		col("d.last_attempt_at", kTime, func(e *keelpay.Event) any { return &e.Delivery.LastAttemptAt }),
		col("d.next_attempt_at", kTime, func(e *keelpay.Event) any { return &e.Delivery.NextAttemptAt }),
		col("d.last_status_code", kInt, func(e *keelpay.Event) any { return &e.Delivery.LastStatusCode }),
		col("d.last_failure", kText, func(e *keelpay.Event) any { return (*string)(&e.Delivery.LastFailure) }),
	},
}

// EventColumns are the columns of an event with its delivery, of events e
// joined to deliveries d.
var EventColumns = eventTable.list()

// ScanEvent reads an event with its delivery. The next attempt is kept
// only while the delivery is pending.
func (r Records) ScanEvent(row Row) (*keelpay.Event, error) {
	var e keelpay.Event
	if err := eventTable.scan(r, row, &e); err != nil {
		return nil, err
	}
	if e.Delivery.Status != keelpay.DeliveryPending {
		e.Delivery.NextAttemptAt = time.Time{}
	}
	return &e, nil
}

// deliveryAttemptTable declares the columns of a delivery attempt, read
// back (an adapter records attempts with its own statements). duration_us
// is the duration in microseconds (see ScanDeliveryAttempt).
var deliveryAttemptTable = table[keelpay.DeliveryAttempt]{
	id: func(a *keelpay.DeliveryAttempt) string { return a.ID },
	cols: []column[keelpay.DeliveryAttempt]{
		col("id", kText, func(a *keelpay.DeliveryAttempt) any { return &a.ID }),
		col("event_id", kText, func(a *keelpay.DeliveryAttempt) any { return &a.EventID }),
		col("store_id", kText, func(a *keelpay.DeliveryAttempt) any { return &a.StoreID }),
		col("started_at", kTime, func(a *keelpay.DeliveryAttempt) any { return &a.StartedAt }),
		col("duration_us", kInt64, func(a *keelpay.DeliveryAttempt) any { return (*int64)(&a.Duration) }),
		col("status_code", kInt, func(a *keelpay.DeliveryAttempt) any { return &a.StatusCode }),
		col("failure", kText, func(a *keelpay.DeliveryAttempt) any { return (*string)(&a.Failure) }),
		col("response_body", kText, func(a *keelpay.DeliveryAttempt) any { return &a.ResponseBody }),
	},
}

// DeliveryAttemptColumns are the columns of a delivery attempt.
var DeliveryAttemptColumns = deliveryAttemptTable.list()

// ScanDeliveryAttempt reads a delivery attempt.
func (r Records) ScanDeliveryAttempt(row Row) (*keelpay.DeliveryAttempt, error) {
	var a keelpay.DeliveryAttempt
	if err := deliveryAttemptTable.scan(r, row, &a); err != nil {
		return nil, err
	}
	a.Duration *= time.Microsecond // read as microseconds
	return &a, nil
}

// JobColumns are the columns of a delivery job, of deliveries d joined to
// events e and stores s.
const JobColumns = `d.event_id, d.store_id, e.type, e.body, d.attempts, s.webhook_url, s.webhook_secret`

// JobScanner reads the jobs of one claim. A claim holds many deliveries
// of few stores: it opens each store's webhook secret once.
type JobScanner struct {
	r      Records
	token  string
	opened map[[2]string]string
}

// Jobs returns a JobScanner of the claim under token.
func (r Records) Jobs(token string) *JobScanner {
	return &JobScanner{r: r, token: token, opened: map[[2]string]string{}}
}

// Scan reads a job from the columns of JobColumns and then into extra,
// the claim's own columns that follow them.
func (s *JobScanner) Scan(row Row, extra ...any) (*storage.DeliveryJob, error) {
	j := &storage.DeliveryJob{LeaseToken: s.token}
	var sealed string
	dst := make([]any, 0, 7+len(extra))
	dst = append(dst, &j.EventID, &j.StoreID, (*string)(&j.Type), &j.Body, &j.Attempts, &j.WebhookURL, &sealed)
	dst = append(dst, extra...)
	if err := row.Scan(dst...); err != nil {
		return nil, s.r.D.MapErr(err)
	}
	key := [2]string{j.StoreID, sealed}
	if secret, ok := s.opened[key]; ok {
		j.WebhookSecret = secret
		return j, nil
	}
	var err error
	if j.WebhookSecret, err = s.r.Codec.Open(atrest.StoreWebhookSecret, sealed, j.StoreID); err != nil {
		return nil, err
	}
	s.opened[key] = j.WebhookSecret
	return j, nil
}

// Idempotency keys.

// idempotencyTable declares the columns of an idempotency record, read
// back (the writes of a record are statements of their own). Its body is
// sealed as a blob (see ScanIdempotency).
var idempotencyTable = table[storage.IdempotencyRecord]{
	id: func(k *storage.IdempotencyRecord) string { return k.Key },
	cols: []column[storage.IdempotencyRecord]{
		col("store_id", kText, func(k *storage.IdempotencyRecord) any { return &k.StoreID }),
		col("key", kText, func(k *storage.IdempotencyRecord) any { return &k.Key }),
		col("fingerprint", kBytes, func(k *storage.IdempotencyRecord) any { return &k.Fingerprint }),
		col("lock_token", kText, func(k *storage.IdempotencyRecord) any { return &k.LockToken }),
		col("locked_until", kTime, func(k *storage.IdempotencyRecord) any { return &k.LockedUntil }),
		col("status", kInt, func(k *storage.IdempotencyRecord) any { return &k.Status }),
		col("body", kBytes, func(k *storage.IdempotencyRecord) any { return &k.Body }),
		col("created_at", kTime, func(k *storage.IdempotencyRecord) any { return &k.CreatedAt }),
		col("expires_at", kTime, func(k *storage.IdempotencyRecord) any { return &k.ExpiresAt }),
		col("recovery_point", kText, func(k *storage.IdempotencyRecord) any { return &k.RecoveryPoint }),
		col("object_id", kText, func(k *storage.IdempotencyRecord) any { return &k.ObjectID }),
	},
}

// IdempotencyColumns are the columns of an idempotency record.
var IdempotencyColumns = idempotencyTable.list()

// ScanIdempotency reads an idempotency record and opens its stored
// response. A record without one has a nil Body.
func (r Records) ScanIdempotency(row Row) (*storage.IdempotencyRecord, error) {
	var k storage.IdempotencyRecord
	err := idempotencyTable.scan(r, row, &k)
	if err != nil {
		return nil, err
	}
	if len(k.Body) == 0 {
		k.Body = nil
	} else if k.Body, err = r.Codec.OpenBody(k.StoreID, k.Key, k.Body); err != nil {
		return nil, err
	}
	return &k, nil
}
