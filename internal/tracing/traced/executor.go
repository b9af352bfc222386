// The storage spans: one per query method of storage.Executor, named
// "storage." and the method. Keep it in step with the query interfaces of
// package storage (a method missing here is still served, untraced, by
// the embedded Executor).

package traced

import (
	"context"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

func (x executor) StoreInsert(ctx context.Context, s *keelpay.Store) error {
	ctx, span := x.tracer.Start(ctx, "storage.StoreInsert")
	err := x.Executor.StoreInsert(ctx, s)
	endStorage(span, err)
	return err
}

func (x executor) StoreGetByID(ctx context.Context, id string) (*keelpay.Store, error) {
	ctx, span := x.tracer.Start(ctx, "storage.StoreGetByID")
	r0, err := x.Executor.StoreGetByID(ctx, id)
	endStorage(span, err)
	return r0, err
}

func (x executor) StoreGetByClientID(ctx context.Context, clientID string) (*keelpay.Store, error) {
	ctx, span := x.tracer.Start(ctx, "storage.StoreGetByClientID")
	r0, err := x.Executor.StoreGetByClientID(ctx, clientID)
	endStorage(span, err)
	return r0, err
}

func (x executor) StoreGetBySecretKeyHash(ctx context.Context, hash []byte) (*keelpay.Store, error) {
	ctx, span := x.tracer.Start(ctx, "storage.StoreGetBySecretKeyHash")
	r0, err := x.Executor.StoreGetBySecretKeyHash(ctx, hash)
	endStorage(span, err)
	return r0, err
}

func (x executor) StoreGetByPublishableKey(ctx context.Context, key string) (*keelpay.Store, error) {
	ctx, span := x.tracer.Start(ctx, "storage.StoreGetByPublishableKey")
	r0, err := x.Executor.StoreGetByPublishableKey(ctx, key)
	endStorage(span, err)
	return r0, err
}

func (x executor) StoreUpdate(ctx context.Context, s *keelpay.Store, expectedVersion int64) error {
	ctx, span := x.tracer.Start(ctx, "storage.StoreUpdate")
	err := x.Executor.StoreUpdate(ctx, s, expectedVersion)
	endStorage(span, err)
	return err
}

func (x executor) RateLimitTake(ctx context.Context, now time.Time, limits ...storage.RateLimit) (time.Duration, error) {
	ctx, span := x.tracer.Start(ctx, "storage.RateLimitTake")
	r0, err := x.Executor.RateLimitTake(ctx, now, limits...)
	endStorage(span, err)
	return r0, err
}

func (x executor) RateLimitDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	ctx, span := x.tracer.Start(ctx, "storage.RateLimitDeleteExpired")
	r0, err := x.Executor.RateLimitDeleteExpired(ctx, now, limit)
	endStorage(span, err)
	return r0, err
}

func (x executor) EventInsert(ctx context.Context, e *keelpay.Event) error {
	ctx, span := x.tracer.Start(ctx, "storage.EventInsert")
	err := x.Executor.EventInsert(ctx, e)
	endStorage(span, err)
	return err
}

func (x executor) EventGet(ctx context.Context, storeID, id string) (*keelpay.Event, error) {
	ctx, span := x.tracer.Start(ctx, "storage.EventGet")
	r0, err := x.Executor.EventGet(ctx, storeID, id)
	endStorage(span, err)
	return r0, err
}

func (x executor) EventList(ctx context.Context, p storage.EventListParams) ([]*keelpay.Event, bool, error) {
	ctx, span := x.tracer.Start(ctx, "storage.EventList")
	r0, r1, err := x.Executor.EventList(ctx, p)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) DeliveryClaimDue(ctx context.Context, p storage.DeliveryClaimParams) ([]*storage.DeliveryJob, error) {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryClaimDue")
	r0, err := x.Executor.DeliveryClaimDue(ctx, p)
	endStorage(span, err)
	return r0, err
}

func (x executor) DeliveryClaimEvent(ctx context.Context, eventID string, p storage.DeliveryClaimParams) (*storage.DeliveryJob, error) {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryClaimEvent")
	r0, err := x.Executor.DeliveryClaimEvent(ctx, eventID, p)
	endStorage(span, err)
	return r0, err
}

func (x executor) DeliveryRecord(ctx context.Context, results []storage.DeliveryResult) error {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryRecord")
	err := x.Executor.DeliveryRecord(ctx, results)
	endStorage(span, err)
	return err
}

func (x executor) DeliveryAttemptList(ctx context.Context, p storage.DeliveryAttemptListParams) ([]*keelpay.DeliveryAttempt, bool, error) {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryAttemptList")
	r0, r1, err := x.Executor.DeliveryAttemptList(ctx, p)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) DeliveryRedeliver(ctx context.Context, storeID, eventID string, now time.Time) (*keelpay.Event, error) {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryRedeliver")
	r0, err := x.Executor.DeliveryRedeliver(ctx, storeID, eventID, now)
	endStorage(span, err)
	return r0, err
}

func (x executor) DeliveryRedeliverMany(ctx context.Context, p storage.DeliveryRedeliverManyParams) (int, string, error) {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryRedeliverMany")
	r0, r1, err := x.Executor.DeliveryRedeliverMany(ctx, p)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) DeliveryNextDue(ctx context.Context) (time.Time, error) {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryNextDue")
	r0, err := x.Executor.DeliveryNextDue(ctx)
	endStorage(span, err)
	return r0, err
}

func (x executor) DeliveryCounts(ctx context.Context) (int, int, error) {
	ctx, span := x.tracer.Start(ctx, "storage.DeliveryCounts")
	r0, r1, err := x.Executor.DeliveryCounts(ctx)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) CardSessionInsert(ctx context.Context, s *keelpay.CardSession) error {
	ctx, span := x.tracer.Start(ctx, "storage.CardSessionInsert")
	err := x.Executor.CardSessionInsert(ctx, s)
	endStorage(span, err)
	return err
}

func (x executor) CardSessionGet(ctx context.Context, storeID, id string) (*keelpay.CardSession, error) {
	ctx, span := x.tracer.Start(ctx, "storage.CardSessionGet")
	r0, err := x.Executor.CardSessionGet(ctx, storeID, id)
	endStorage(span, err)
	return r0, err
}

func (x executor) CardSessionComplete(ctx context.Context, storeID, id, cardID string, now time.Time) error {
	ctx, span := x.tracer.Start(ctx, "storage.CardSessionComplete")
	err := x.Executor.CardSessionComplete(ctx, storeID, id, cardID, now)
	endStorage(span, err)
	return err
}

func (x executor) CardSessionExpireDue(ctx context.Context, now time.Time) (int, error) {
	ctx, span := x.tracer.Start(ctx, "storage.CardSessionExpireDue")
	r0, err := x.Executor.CardSessionExpireDue(ctx, now)
	endStorage(span, err)
	return r0, err
}

func (x executor) CardInsert(ctx context.Context, c *keelpay.Card) error {
	ctx, span := x.tracer.Start(ctx, "storage.CardInsert")
	err := x.Executor.CardInsert(ctx, c)
	endStorage(span, err)
	return err
}

func (x executor) CardGet(ctx context.Context, storeID, id string) (*keelpay.Card, error) {
	ctx, span := x.tracer.Start(ctx, "storage.CardGet")
	r0, err := x.Executor.CardGet(ctx, storeID, id)
	endStorage(span, err)
	return r0, err
}

func (x executor) CardUpdateStatus(ctx context.Context, storeID, id string, status keelpay.CardStatus) error {
	ctx, span := x.tracer.Start(ctx, "storage.CardUpdateStatus")
	err := x.Executor.CardUpdateStatus(ctx, storeID, id, status)
	endStorage(span, err)
	return err
}

func (x executor) CardList(ctx context.Context, p storage.CardListParams) ([]*keelpay.Card, bool, error) {
	ctx, span := x.tracer.Start(ctx, "storage.CardList")
	r0, r1, err := x.Executor.CardList(ctx, p)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) CardDelete(ctx context.Context, storeID, id string) error {
	ctx, span := x.tracer.Start(ctx, "storage.CardDelete")
	err := x.Executor.CardDelete(ctx, storeID, id)
	endStorage(span, err)
	return err
}

func (x executor) CustomerErase(ctx context.Context, storeID, customerID string) (storage.CustomerErasure, error) {
	ctx, span := x.tracer.Start(ctx, "storage.CustomerErase")
	r0, err := x.Executor.CustomerErase(ctx, storeID, customerID)
	endStorage(span, err)
	return r0, err
}

func (x executor) PaymentIntentInsert(ctx context.Context, pi *keelpay.PaymentIntent) error {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentInsert")
	err := x.Executor.PaymentIntentInsert(ctx, pi)
	endStorage(span, err)
	return err
}

func (x executor) PaymentIntentGetWithCard(ctx context.Context, storeID, id, cardID string) (*keelpay.PaymentIntent, *keelpay.Card, error) {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentGetWithCard")
	r0, r1, err := x.Executor.PaymentIntentGetWithCard(ctx, storeID, id, cardID)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) PaymentIntentGet(ctx context.Context, storeID, id string) (*keelpay.PaymentIntent, error) {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentGet")
	r0, err := x.Executor.PaymentIntentGet(ctx, storeID, id)
	endStorage(span, err)
	return r0, err
}

func (x executor) PaymentIntentGetByAttempt(ctx context.Context, attemptID string) (*keelpay.PaymentIntent, error) {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentGetByAttempt")
	r0, err := x.Executor.PaymentIntentGetByAttempt(ctx, attemptID)
	endStorage(span, err)
	return r0, err
}

func (x executor) PaymentIntentStartAttempt(ctx context.Context, a *storage.AttemptStart) error {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentStartAttempt")
	err := x.Executor.PaymentIntentStartAttempt(ctx, a)
	endStorage(span, err)
	return err
}

func (x executor) PaymentIntentUpdate(ctx context.Context, pi *keelpay.PaymentIntent, expectedVersion int64) error {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentUpdate")
	err := x.Executor.PaymentIntentUpdate(ctx, pi, expectedVersion)
	endStorage(span, err)
	return err
}

func (x executor) PaymentIntentList(ctx context.Context, p storage.PaymentIntentListParams) ([]*keelpay.PaymentIntent, bool, error) {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentList")
	r0, r1, err := x.Executor.PaymentIntentList(ctx, p)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) PaymentIntentListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentListReconcileDue")
	r0, err := x.Executor.PaymentIntentListReconcileDue(ctx, now, limit)
	endStorage(span, err)
	return r0, err
}

func (x executor) PaymentIntentListExpireDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.PaymentIntent, error) {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentListExpireDue")
	r0, err := x.Executor.PaymentIntentListExpireDue(ctx, now, limit)
	endStorage(span, err)
	return r0, err
}

func (x executor) PaymentIntentCounts(ctx context.Context) (storage.PaymentIntentCounts, error) {
	ctx, span := x.tracer.Start(ctx, "storage.PaymentIntentCounts")
	r0, err := x.Executor.PaymentIntentCounts(ctx)
	endStorage(span, err)
	return r0, err
}

func (x executor) AttemptCheckInsert(ctx context.Context, c *storage.AttemptCheck) error {
	ctx, span := x.tracer.Start(ctx, "storage.AttemptCheckInsert")
	err := x.Executor.AttemptCheckInsert(ctx, c)
	endStorage(span, err)
	return err
}

func (x executor) AttemptCheckListDue(ctx context.Context, now time.Time, limit int) ([]*storage.AttemptCheck, error) {
	ctx, span := x.tracer.Start(ctx, "storage.AttemptCheckListDue")
	r0, err := x.Executor.AttemptCheckListDue(ctx, now, limit)
	endStorage(span, err)
	return r0, err
}

func (x executor) AttemptCheckReschedule(ctx context.Context, attemptID string, checkAt time.Time, checks int) error {
	ctx, span := x.tracer.Start(ctx, "storage.AttemptCheckReschedule")
	err := x.Executor.AttemptCheckReschedule(ctx, attemptID, checkAt, checks)
	endStorage(span, err)
	return err
}

func (x executor) AttemptCheckGet(ctx context.Context, attemptID string) (*storage.AttemptCheck, error) {
	ctx, span := x.tracer.Start(ctx, "storage.AttemptCheckGet")
	r0, err := x.Executor.AttemptCheckGet(ctx, attemptID)
	endStorage(span, err)
	return r0, err
}

func (x executor) AttemptCheckDelete(ctx context.Context, attemptID string) error {
	ctx, span := x.tracer.Start(ctx, "storage.AttemptCheckDelete")
	err := x.Executor.AttemptCheckDelete(ctx, attemptID)
	endStorage(span, err)
	return err
}

func (x executor) RefundInsert(ctx context.Context, r *keelpay.Refund) error {
	ctx, span := x.tracer.Start(ctx, "storage.RefundInsert")
	err := x.Executor.RefundInsert(ctx, r)
	endStorage(span, err)
	return err
}

func (x executor) RefundGet(ctx context.Context, storeID, id string) (*keelpay.Refund, error) {
	ctx, span := x.tracer.Start(ctx, "storage.RefundGet")
	r0, err := x.Executor.RefundGet(ctx, storeID, id)
	endStorage(span, err)
	return r0, err
}

func (x executor) RefundGetByIntent(ctx context.Context, storeID, paymentIntentID string) (*keelpay.Refund, error) {
	ctx, span := x.tracer.Start(ctx, "storage.RefundGetByIntent")
	r0, err := x.Executor.RefundGetByIntent(ctx, storeID, paymentIntentID)
	endStorage(span, err)
	return r0, err
}

func (x executor) RefundGetByAttempt(ctx context.Context, attemptID string) (*keelpay.Refund, error) {
	ctx, span := x.tracer.Start(ctx, "storage.RefundGetByAttempt")
	r0, err := x.Executor.RefundGetByAttempt(ctx, attemptID)
	endStorage(span, err)
	return r0, err
}

func (x executor) RefundUpdate(ctx context.Context, r *keelpay.Refund, expectedVersion int64) error {
	ctx, span := x.tracer.Start(ctx, "storage.RefundUpdate")
	err := x.Executor.RefundUpdate(ctx, r, expectedVersion)
	endStorage(span, err)
	return err
}

func (x executor) RefundDelete(ctx context.Context, storeID, id string, expectedVersion int64) error {
	ctx, span := x.tracer.Start(ctx, "storage.RefundDelete")
	err := x.Executor.RefundDelete(ctx, storeID, id, expectedVersion)
	endStorage(span, err)
	return err
}

func (x executor) RefundList(ctx context.Context, p storage.RefundListParams) ([]*keelpay.Refund, bool, error) {
	ctx, span := x.tracer.Start(ctx, "storage.RefundList")
	r0, r1, err := x.Executor.RefundList(ctx, p)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) RefundListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.Refund, error) {
	ctx, span := x.tracer.Start(ctx, "storage.RefundListReconcileDue")
	r0, err := x.Executor.RefundListReconcileDue(ctx, now, limit)
	endStorage(span, err)
	return r0, err
}

func (x executor) IdempotencyBegin(ctx context.Context, p storage.IdempotencyBeginParams) (*storage.IdempotencyRecord, bool, error) {
	ctx, span := x.tracer.Start(ctx, "storage.IdempotencyBegin")
	r0, r1, err := x.Executor.IdempotencyBegin(ctx, p)
	endStorage(span, err)
	return r0, r1, err
}

func (x executor) IdempotencyTake(ctx context.Context, p storage.IdempotencyTakeParams) error {
	ctx, span := x.tracer.Start(ctx, "storage.IdempotencyTake")
	err := x.Executor.IdempotencyTake(ctx, p)
	endStorage(span, err)
	return err
}

func (x executor) IdempotencyGet(ctx context.Context, storeID, key string) (*storage.IdempotencyRecord, error) {
	ctx, span := x.tracer.Start(ctx, "storage.IdempotencyGet")
	r0, err := x.Executor.IdempotencyGet(ctx, storeID, key)
	endStorage(span, err)
	return r0, err
}

func (x executor) IdempotencyProgress(ctx context.Context, p storage.IdempotencyProgressParams) error {
	ctx, span := x.tracer.Start(ctx, "storage.IdempotencyProgress")
	err := x.Executor.IdempotencyProgress(ctx, p)
	endStorage(span, err)
	return err
}

func (x executor) IdempotencyComplete(ctx context.Context, p storage.IdempotencyCompleteParams) error {
	ctx, span := x.tracer.Start(ctx, "storage.IdempotencyComplete")
	err := x.Executor.IdempotencyComplete(ctx, p)
	endStorage(span, err)
	return err
}

func (x executor) IdempotencyRelease(ctx context.Context, storeID, key, lockToken string) error {
	ctx, span := x.tracer.Start(ctx, "storage.IdempotencyRelease")
	err := x.Executor.IdempotencyRelease(ctx, storeID, key, lockToken)
	endStorage(span, err)
	return err
}

func (x executor) IdempotencyDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	ctx, span := x.tracer.Start(ctx, "storage.IdempotencyDeleteExpired")
	r0, err := x.Executor.IdempotencyDeleteExpired(ctx, now, limit)
	endStorage(span, err)
	return r0, err
}

func (x executor) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	ctx, span := x.tracer.Start(ctx, "storage.EventDeleteBefore")
	r0, err := x.Executor.EventDeleteBefore(ctx, before, limit)
	endStorage(span, err)
	return r0, err
}

func (x executor) CardSessionDeleteExpiredBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	ctx, span := x.tracer.Start(ctx, "storage.CardSessionDeleteExpiredBefore")
	r0, err := x.Executor.CardSessionDeleteExpiredBefore(ctx, before, limit)
	endStorage(span, err)
	return r0, err
}
