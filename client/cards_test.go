package client_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/client"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// TestCardsAndErasure lists a customer's saved cards page by page, deletes
// one (a second delete is 404), and erases the customer, against a real
// keelpay with the strict client.
func TestCardsAndErasure(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	c := newClient(t, kp.URL, store.SecretKey, nil)

	first := store.SaveCard(t, sandbox.CardVisa)
	kp.Clock.Advance(time.Second) // newest first is by creation time
	second := store.SaveCard(t, sandbox.CardMastercard)
	page, err := c.ListCards(ctx, &client.CardListParams{Customer: store.Customer.ID, ListParams: client.ListParams{Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if page.Object != "list" || len(page.Data) != 1 || page.Data[0].ID != second || !page.HasMore {
		t.Fatalf("first page = %+v", page)
	}
	next, err := c.ListCards(ctx, &client.CardListParams{Customer: store.Customer.ID,
		ListParams: client.ListParams{Limit: 1, StartingAfter: second}})
	if err != nil || len(next.Data) != 1 || next.Data[0].ID != first || next.HasMore {
		t.Fatalf("second page = %+v, %v", next, err)
	}
	if _, err := c.ListCards(ctx, &client.CardListParams{}); keelpay.ErrorCode(err) != keelpay.CodeInvalidRequest {
		t.Errorf("list without a customer: %v", err)
	}

	deleted, err := c.DeleteCard(ctx, first)
	if err != nil || deleted.ID != first || deleted.Response.StatusCode != http.StatusOK {
		t.Fatalf("DeleteCard = %+v, %v", deleted, err)
	}
	if _, err := c.DeleteCard(ctx, first); keelpay.ErrorCode(err) != keelpay.CodeCardNotFound {
		t.Errorf("second delete: %v", err)
	}
	if _, err := c.GetCard(ctx, first); keelpay.ErrorCode(err) != keelpay.CodeCardNotFound {
		t.Errorf("a deleted card is read: %v", err)
	}

	erased, err := c.EraseCustomer(ctx, store.Customer.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if erased.Object != "customer_erasure" || erased.Customer != store.Customer.ID || erased.CardsDeleted != 1 ||
		erased.Response.IdempotencyKey == "" {
		t.Errorf("erasure = %+v", erased)
	}
	left, err := c.ListCards(ctx, &client.CardListParams{Customer: store.Customer.ID})
	if err != nil || len(left.Data) != 0 {
		t.Errorf("cards after the erasure = %+v, %v", left, err)
	}
}

// TestListFilters finds intents by customer, status and reference, and
// refunds by intent and status, through the client against a real keelpay.
func TestListFilters(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	c := newClient(t, kp.URL, store.SecretKey, nil)
	card := store.SaveCard(t, sandbox.CardVisa)
	paid := store.Pay(t, card, 1500, "eur")
	other, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 700, Currency: "eur", Customer: store.Customer, Reference: "order-77"})
	if err != nil {
		t.Fatal(err)
	}
	byRef, err := c.ListPaymentIntents(ctx, &client.PaymentIntentListParams{Customer: store.Customer.ID, Reference: "order-77"})
	if err != nil || len(byRef.Data) != 1 || byRef.Data[0].ID != other.ID {
		t.Fatalf("by customer and reference = %+v, %v", byRef, err)
	}
	created, err := time.Parse(time.RFC3339, paid.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	var succeeded []string
	for pi, err := range c.PaymentIntents(ctx, &client.PaymentIntentListParams{Status: keelpay.IntentSucceeded,
		CreatedGTE: created.Add(-time.Minute), CreatedLT: created.Add(time.Minute)}) {
		if err != nil {
			t.Fatal(err)
		}
		succeeded = append(succeeded, pi.ID)
	}
	if len(succeeded) != 1 || succeeded[0] != paid.ID {
		t.Errorf("succeeded in the hour = %v, want %s", succeeded, paid.ID)
	}
	if _, err := c.ListPaymentIntents(ctx, &client.PaymentIntentListParams{Status: "paid"}); keelpay.ErrorCode(err) != keelpay.CodeInvalidRequest {
		t.Errorf("an unknown status: %v", err)
	}

	rf, err := c.CreateRefund(ctx, &client.RefundParams{PaymentIntent: paid.ID, Reason: "returned"})
	if err != nil {
		t.Fatal(err)
	}
	refunds, err := c.ListRefunds(ctx, &client.RefundListParams{PaymentIntent: paid.ID, Status: keelpay.RefundSucceeded})
	if err != nil || len(refunds.Data) != 1 || refunds.Data[0].ID != rf.ID {
		t.Errorf("refunds of the intent = %+v, %v", refunds, err)
	}
	none, err := c.ListRefunds(ctx, &client.RefundListParams{Status: keelpay.RefundFailed})
	if err != nil || len(none.Data) != 0 {
		t.Errorf("failed refunds = %+v, %v", none, err)
	}
}
