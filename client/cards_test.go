package client_test

import (
	"context"
	"net/http"
	"testing"

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
