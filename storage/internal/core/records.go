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

// CardSessionColumns are the columns of a card session.
const CardSessionColumns = `id, store_id, client_secret, customer_id, customer_name, customer_email,
	customer_phone, page_origins, status, card_id, expires_at, created_at`

// CardSessionValues returns s's values, its client secret and its
// customer's name, email and phone sealed.
func (r Records) CardSessionValues(s *keelpay.CardSession) ([]any, error) {
	origins, err := r.D.Strings(s.PageOrigins)
	if err != nil {
		return nil, err
	}
	sealed := r.Codec.SealCardSession(s)
	return []any{s.ID, s.StoreID, sealed[0], s.Customer.ID, sealed[1], sealed[2],
		sealed[3], origins, string(s.Status), s.CardID, r.D.Time(s.ExpiresAt), r.D.Time(s.CreatedAt)}, nil
}

// ScanCardSession reads a card session and opens its client secret and
// its customer's personal data.
func (r Records) ScanCardSession(row Row) (*keelpay.CardSession, error) {
	var s keelpay.CardSession
	err := row.Scan(&s.ID, &s.StoreID, &s.ClientSecret, &s.Customer.ID, &s.Customer.Name, &s.Customer.Email,
		&s.Customer.Phone, r.D.StringsDst(&s.PageOrigins), (*string)(&s.Status), &s.CardID, r.D.TimeDst(&s.ExpiresAt), r.D.TimeDst(&s.CreatedAt))
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	if len(s.PageOrigins) == 0 {
		s.PageOrigins = nil
	}
	if err := r.Codec.OpenCardSession(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Cards.

// CardColumns are the columns of a card.
const CardColumns = `id, store_id, customer_id, card_session_id, provider_token, brand, last4,
	exp_month, exp_year, status, created_at`

// CardValues returns c's values.
func (r Records) CardValues(c *keelpay.Card) []any {
	return []any{c.ID, c.StoreID, c.CustomerID, c.CardSessionID, c.ProviderToken, c.Brand, c.Last4,
		c.ExpMonth, c.ExpYear, string(c.Status), r.D.Time(c.CreatedAt)}
}

// ScanCard reads a card.
func (r Records) ScanCard(row Row) (*keelpay.Card, error) {
	var c keelpay.Card
	err := row.Scan(&c.ID, &c.StoreID, &c.CustomerID, &c.CardSessionID, &c.ProviderToken, &c.Brand, &c.Last4,
		&c.ExpMonth, &c.ExpYear, (*string)(&c.Status), r.D.TimeDst(&c.CreatedAt))
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	return &c, nil
}

// Refunds.

// RefundColumns are the columns of a refund.
const RefundColumns = `id, store_id, payment_intent_id, amount, currency, reason, metadata, status, attempts,
	attempt_id, last_sent_at, last_error, reconcile_at, reconcile_count, succeeded_at, created_at, updated_at, version`

// RefundValues returns rf's values.
func (r Records) RefundValues(rf *keelpay.Refund) ([]any, error) {
	metadata, err := r.D.Metadata(rf.Metadata)
	if err != nil {
		return nil, err
	}
	lastError, err := r.D.LastError(rf.LastError)
	if err != nil {
		return nil, err
	}
	return []any{rf.ID, rf.StoreID, rf.PaymentIntentID, rf.Amount, rf.Currency, rf.Reason, metadata, string(rf.Status), rf.Attempts,
		rf.AttemptID, r.D.Time(rf.LastSentAt), lastError, r.D.Time(rf.ReconcileAt), rf.ReconcileCount,
		r.D.Time(rf.SucceededAt), r.D.Time(rf.CreatedAt), r.D.Time(rf.UpdatedAt), rf.Version}, nil
}

// ScanRefund reads a refund. Its metadata is never nil: an empty object
// reads as an empty map.
func (r Records) ScanRefund(row Row) (*keelpay.Refund, error) {
	var rf keelpay.Refund
	err := row.Scan(&rf.ID, &rf.StoreID, &rf.PaymentIntentID, &rf.Amount, &rf.Currency, &rf.Reason, r.D.MetadataDst(&rf.Metadata), (*string)(&rf.Status),
		&rf.Attempts, &rf.AttemptID, r.D.TimeDst(&rf.LastSentAt), r.D.LastErrorDst(&rf.LastError), r.D.TimeDst(&rf.ReconcileAt), &rf.ReconcileCount,
		r.D.TimeDst(&rf.SucceededAt), r.D.TimeDst(&rf.CreatedAt), r.D.TimeDst(&rf.UpdatedAt), &rf.Version)
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	if rf.Metadata == nil {
		rf.Metadata = map[string]string{}
	}
	return &rf, nil
}

// Stores.

// StoreColumns are the columns of a store. client_secret, which older
// versions kept, is not among them: it is always empty.
const StoreColumns = `id, client_id, client_secret_hash, merchant_id, currency, publishable_key,
	secret_key_hash, webhook_url, webhook_secret, version, created_at, updated_at`

// StoreValues returns s's values, its webhook secret sealed.
func (r Records) StoreValues(s *keelpay.Store) []any {
	return []any{s.ID, s.ClientID, s.ClientSecretHash, s.MerchantID, s.Currency, s.PublishableKey,
		s.SecretKeyHash, s.WebhookURL, r.Codec.Seal(atrest.StoreWebhookSecret, s.WebhookSecret, s.ID), s.Version,
		r.D.Time(s.CreatedAt), r.D.Time(s.UpdatedAt)}
}

// ScanStore reads a store and opens its webhook secret.
func (r Records) ScanStore(row Row) (*keelpay.Store, error) {
	var s keelpay.Store
	err := row.Scan(&s.ID, &s.ClientID, &s.ClientSecretHash, &s.MerchantID, &s.Currency, &s.PublishableKey,
		&s.SecretKeyHash, &s.WebhookURL, &s.WebhookSecret, &s.Version, r.D.TimeDst(&s.CreatedAt), r.D.TimeDst(&s.UpdatedAt))
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	if err := r.Codec.OpenStore(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Attempt checks.

// AttemptCheckColumns are the columns of an attempt check.
const AttemptCheckColumns = `attempt_id, store_id, payment_intent_id, merchant_id, closed_at, check_at, until, checks`

// AttemptCheckValues returns c's values.
func (r Records) AttemptCheckValues(c *storage.AttemptCheck) []any {
	return []any{c.AttemptID, c.StoreID, c.PaymentIntentID, c.MerchantID, r.D.Time(c.ClosedAt), r.D.Time(c.CheckAt), r.D.Time(c.Until), c.Checks}
}

// ScanAttemptCheck reads an attempt check.
func (r Records) ScanAttemptCheck(row Row) (*storage.AttemptCheck, error) {
	var c storage.AttemptCheck
	err := row.Scan(&c.AttemptID, &c.StoreID, &c.PaymentIntentID, &c.MerchantID,
		r.D.TimeDst(&c.ClosedAt), r.D.TimeDst(&c.CheckAt), r.D.TimeDst(&c.Until), &c.Checks)
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	return &c, nil
}

// Events and deliveries.

// EventColumns are the columns of an event with its delivery, of events e
// joined to deliveries d.
const EventColumns = `e.id, e.store_id, e.type, e.body, e.created_at,
	d.status, d.attempts, d.last_attempt_at, d.next_attempt_at, d.last_status_code, d.last_failure`

// ScanEvent reads an event with its delivery. The next attempt is kept
// only while the delivery is pending.
func (r Records) ScanEvent(row Row) (*keelpay.Event, error) {
	var e keelpay.Event
	var body []byte
	var next time.Time
	err := row.Scan(&e.ID, &e.StoreID, (*string)(&e.Type), &body, r.D.TimeDst(&e.CreatedAt),
		(*string)(&e.Delivery.Status), &e.Delivery.Attempts, r.D.TimeDst(&e.Delivery.LastAttemptAt), r.D.TimeDst(&next),
		&e.Delivery.LastStatusCode, (*string)(&e.Delivery.LastFailure))
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	e.Body = body
	if e.Delivery.Status == keelpay.DeliveryPending {
		e.Delivery.NextAttemptAt = next
	}
	return &e, nil
}

// DeliveryAttemptColumns are the columns of a delivery attempt.
const DeliveryAttemptColumns = `id, event_id, store_id, started_at, duration_us, status_code, failure, response_body`

// ScanDeliveryAttempt reads a delivery attempt.
func (r Records) ScanDeliveryAttempt(row Row) (*keelpay.DeliveryAttempt, error) {
	var a keelpay.DeliveryAttempt
	var dur int64
	err := row.Scan(&a.ID, &a.EventID, &a.StoreID, r.D.TimeDst(&a.StartedAt), &dur, &a.StatusCode, (*string)(&a.Failure), &a.ResponseBody)
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	a.Duration = time.Duration(dur) * time.Microsecond
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

// IdempotencyColumns are the columns of an idempotency record.
const IdempotencyColumns = `store_id, key, fingerprint, lock_token, locked_until,
	status, body, created_at, expires_at, recovery_point, object_id`

// ScanIdempotency reads an idempotency record and opens its stored
// response. A record without one has a nil Body.
func (r Records) ScanIdempotency(row Row) (*storage.IdempotencyRecord, error) {
	var k storage.IdempotencyRecord
	err := row.Scan(&k.StoreID, &k.Key, &k.Fingerprint, &k.LockToken, r.D.TimeDst(&k.LockedUntil),
		&k.Status, &k.Body, r.D.TimeDst(&k.CreatedAt), r.D.TimeDst(&k.ExpiresAt), &k.RecoveryPoint, &k.ObjectID)
	if err != nil {
		return nil, r.D.MapErr(err)
	}
	if len(k.Body) == 0 {
		k.Body = nil
	} else if k.Body, err = r.Codec.OpenBody(k.StoreID, k.Key, k.Body); err != nil {
		return nil, err
	}
	return &k, nil
}
