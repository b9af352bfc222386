package storage

import (
	"context"
	"time"

	"github.com/keelpay/keelpay"
)

// PaymentIntentListParams selects a page of a store's payment intents.
// The filters that are set are combined (AND); the cursors page within
// them.
type PaymentIntentListParams struct {
	StoreID string
	// CustomerID, Status and Reference, when set, keep only the intents
	// with that customer id, status or reference.
	CustomerID string
	Status     keelpay.PaymentIntentStatus
	Reference  string
	// CreatedGTE and CreatedLT, when not zero, keep only the intents
	// created at or after CreatedGTE and before CreatedLT.
	CreatedGTE time.Time
	CreatedLT  time.Time
	// Limit is the most intents returned (1 to 100).
	Limit int
	// StartingAfter and EndingBefore are intent ids (at most one is set):
	// the page after (older than) or before (newer than) that intent.
	StartingAfter string
	EndingBefore  string
}

// CardListParams selects a page of a customer's saved cards.
type CardListParams struct {
	StoreID    string
	CustomerID string
	// Limit is the most cards returned (1 to 100).
	Limit int
	// StartingAfter and EndingBefore are card ids (at most one is set):
	// the page after (older than) or before (newer than) that card.
	StartingAfter string
	EndingBefore  string
}

// CustomerErasure counts what [PaymentQueries.CustomerErase] changed.
type CustomerErasure struct {
	// PaymentIntents and CardSessions are the rows whose personal data
	// was removed (rows that had none left count too).
	PaymentIntents int
	CardSessions   int
}

// PaymentIntentCounts counts every store's payment intents, for metrics.
type PaymentIntentCounts struct {
	// ByStatus has an entry for each status that occurs.
	ByStatus map[keelpay.PaymentIntentStatus]int
	// OutcomeUnknown counts the processing intents whose last_error is
	// outcome_unknown: charges nobody knows the outcome of yet.
	OutcomeUnknown int
}

// PaymentQueries reads and writes card sessions, cards and payment intents.
//
// Reads that serve a client take the store id, so another store's object is
// not found. The queries of the background workers (the List...Due methods,
// [PaymentQueries.PaymentIntentGetByAttempt], the counts) range over every
// store: they serve the service, not a client.
type PaymentQueries interface {
	// CardSessionInsert adds a card session. ErrDuplicate when its id is
	// taken.
	CardSessionInsert(ctx context.Context, s *keelpay.CardSession) error
	// CardSessionGet returns a card session of a store, or ErrNotFound.
	CardSessionGet(ctx context.Context, storeID, id string) (*keelpay.CardSession, error)
	// CardSessionComplete marks an open card session, whose expiry is
	// after now, completed with the card saved through it. ErrNotFound
	// when the store has no such session; ErrConflict when it is not open
	// or has expired (so two captures cannot both complete it).
	CardSessionComplete(ctx context.Context, storeID, id, cardID string, now time.Time) error
	// CardSessionExpireDue marks every open card session whose expiry is
	// at or before now expired and returns how many it marked.
	CardSessionExpireDue(ctx context.Context, now time.Time) (int, error)

	// CardInsert adds a saved card. ErrDuplicate when its id is taken.
	CardInsert(ctx context.Context, c *keelpay.Card) error
	// CardGet returns a card of a store, or ErrNotFound.
	CardGet(ctx context.Context, storeID, id string) (*keelpay.Card, error)
	// CardUpdateStatus sets a card's status; ErrNotFound when the store
	// has no such card.
	CardUpdateStatus(ctx context.Context, storeID, id string, status keelpay.CardStatus) error
	// CardList returns a page of the cards of a store's customer, newest
	// first (by created_at, then id), and whether there are more beyond it
	// in the direction of travel. A cursor that is not a card of that
	// customer of the store is ErrNotFound.
	CardList(ctx context.Context, p CardListParams) (cards []*keelpay.Card, hasMore bool, err error)
	// CardDelete removes a card of a store for good, its provider token
	// with it. ErrNotFound when the store has no such card.
	CardDelete(ctx context.Context, storeID, id string) error

	// CustomerErase removes the personal data of a store's customer from
	// its payment intents and card sessions: the customer's name, email
	// and phone, and the intents' billing details, become empty, and an
	// open card session becomes expired. The customer id and everything
	// else stays. An intent's version moves,
	// so that a concurrent PaymentIntentUpdate that read it before cannot
	// write the data back (it gets ErrConflict). Saved cards are not
	// touched: the service deletes them one by one, after the provider
	// forgot them. Called outside a transaction, an adapter whose files
	// keep old row versions may also wipe them once the erasure committed
	// (storage/sqlite empties its write-ahead log).
	CustomerErase(ctx context.Context, storeID, customerID string) (CustomerErasure, error)

	// PaymentIntentInsert adds a payment intent. ErrDuplicate when its id
	// is taken.
	PaymentIntentInsert(ctx context.Context, pi *keelpay.PaymentIntent) error
	// PaymentIntentGet returns a payment intent of a store, or ErrNotFound.
	PaymentIntentGet(ctx context.Context, storeID, id string) (*keelpay.PaymentIntent, error)
	// PaymentIntentGetWithCard returns a payment intent of a store, as
	// PaymentIntentGet, with the card a confirm of it charges: the store's
	// card cardID, or the intent's own card when cardID is empty; card is
	// nil when there is no such card. A database server answers both in
	// one round trip.
	PaymentIntentGetWithCard(ctx context.Context, storeID, id, cardID string) (pi *keelpay.PaymentIntent, card *keelpay.Card, err error)
	// PaymentIntentGetByAttempt returns the intent whose current or last
	// attempt has this id, or ErrNotFound. It serves the provider's
	// notifications, which name only the merchant and the attempt.
	PaymentIntentGetByAttempt(ctx context.Context, attemptID string) (*keelpay.PaymentIntent, error)
	// PaymentIntentUpdate writes pi (every field but ID, StoreID,
	// CreatedAt, ClientSecret and Customer, which an update never changes:
	// only CustomerErase empties the customer's personal data) when the
	// stored version is still expectedVersion, and
	// sets pi.Version to expectedVersion+1. ErrConflict when the version
	// moved, ErrNotFound when the store has no such intent. The version
	// check is what lets only one of several concurrent confirms record an
	// attempt, and only one process finish it.
	PaymentIntentUpdate(ctx context.Context, pi *keelpay.PaymentIntent, expectedVersion int64) error
	// PaymentIntentStartAttempt records the first attempt of an intent
	// that has not been read, with the card it was created with, in one
	// conditional write: see [AttemptStart] for what it checks and
	// writes. ErrConflict, with nothing written, when anything is not as
	// it requires, whatever it is: the caller reads the intent to tell
	// why. In a batch, a database server is sent its write and its reads
	// with the batch's others, in one round trip.
	PaymentIntentStartAttempt(ctx context.Context, a *AttemptStart) error
	// PaymentIntentList returns a page of a store's intents that match the
	// filters, newest first (by created_at, then by insertion), and
	// whether there are more beyond it in the direction of travel. A
	// cursor that is not an intent of the store is ErrNotFound; a cursor
	// of the store that does not match the filters still places the page.
	PaymentIntentList(ctx context.Context, p PaymentIntentListParams) (intents []*keelpay.PaymentIntent, hasMore bool, err error)
	// PaymentIntentListReconcileDue returns at most limit intents in
	// processing or requires_action whose ReconcileAt is set and at or
	// before now, earliest first: attempts whose outcome the service must
	// look up at the provider.
	PaymentIntentListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error)
	// PaymentIntentListExpireDue returns at most limit intents in
	// requires_payment_method whose ExpiresAt is at or before now,
	// earliest first.
	PaymentIntentListExpireDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error)
	// PaymentIntentCounts counts the intents of every store.
	PaymentIntentCounts(ctx context.Context) (PaymentIntentCounts, error)

	// AttemptCheckInsert schedules the look-ups of an attempt closed as
	// never charged. Call it in the transaction that closes the attempt.
	// Inserting a check the attempt already has changes nothing.
	AttemptCheckInsert(ctx context.Context, c *AttemptCheck) error
	// AttemptCheckListDue returns at most limit checks of every store
	// whose CheckAt is at or before now, earliest first.
	AttemptCheckListDue(ctx context.Context, now time.Time, limit int) ([]*AttemptCheck, error)
	// AttemptCheckGet returns the check of an attempt, of any store, or
	// ErrNotFound. It serves the provider's notifications about a charge
	// whose attempt is closed (a void that failed after it held).
	AttemptCheckGet(ctx context.Context, attemptID string) (*AttemptCheck, error)
	// AttemptCheckReschedule moves a check to checkAt and records that it
	// was made once more (Checks). ErrNotFound when there is no such check.
	AttemptCheckReschedule(ctx context.Context, attemptID string, checkAt time.Time, checks int) error
	// AttemptCheckDelete ends the look-ups of an attempt. Deleting a check
	// that is gone changes nothing.
	AttemptCheckDelete(ctx context.Context, attemptID string) error
}

// AttemptCheck is a payment attempt that the service closed as never
// charged because the provider did not know it, while the run that made
// it could, in principle, still send it late: its process paused and woke
// up, or its request sat in a stalled network. The reconciler keeps
// looking the attempt up until Until, and voids a charge it finds.
type AttemptCheck struct {
	AttemptID       string
	StoreID         string
	PaymentIntentID string
	// MerchantID is the merchant the attempt was made with, whom the
	// look-ups and the void ask.
	MerchantID string
	// ClosedAt is when the attempt was closed; CheckAt when it is looked
	// up next; Until when the look-ups end.
	ClosedAt time.Time
	CheckAt  time.Time
	Until    time.Time
	// Checks is how many look-ups were made.
	Checks int
}

// AttemptStart is the first payment attempt of an intent, recorded by
// [PaymentQueries.PaymentIntentStartAttempt] without reading the intent
// first: the conditions a confirm checks before it records an attempt
// are checked by the write itself.
//
// It is recorded only when the store has the intent at ExpectedVersion,
// in requires_payment_method, with ExpiresAt after Now, with no attempt
// so far (AttemptID, MerchantID, LastError and NextAction empty,
// AttemptAt and ReconcileAt zero, ReconcileCount 0), and with a card
// (CardID, when set, must be it) that is the store's card of the intent's
// customer and active. The write then sets the status to processing,
// AttemptID, AttemptAt (Now), MerchantID, ReconcileAt, UpdatedAt (Now)
// and the next version, and nothing else: the card, its payment method
// and the billing details stay as the intent was created with them.
// So the intent before the write is the one after it with those fields
// as the conditions say.
type AttemptStart struct {
	StoreID, ID     string
	ExpectedVersion int64
	// CardID is the card the confirm names; "" for the intent's own.
	CardID string
	// AttemptID, MerchantID, Now and ReconcileAt are the attempt's.
	AttemptID   string
	MerchantID  string
	Now         time.Time
	ReconcileAt time.Time

	// Intent and Card are set when the write is made: the intent as
	// written, at ExpectedVersion+1, and its card. In a batch that fails
	// they may be set too, and mean nothing.
	Intent *keelpay.PaymentIntent
	Card   *keelpay.Card
}
