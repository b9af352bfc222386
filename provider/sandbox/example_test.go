package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// A charge whose outcome is unknown at first: the provider times out, and a
// lookup two minutes later tells that the card was charged.
func Example_outcomeUnknown() {
	ctx := context.Background()
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})

	app, err := sb.CheckApplication(ctx, provider.Credentials{ClientID: "app_shop1", ClientSecret: "secret_shop1"})
	if err != nil {
		panic(err)
	}
	req := provider.ChargeRequest{
		MerchantID: app.MerchantID,
		AttemptID:  "att_1",
		NewCard:    &provider.SaveCardRequest{Number: sandbox.CardOutcomeUnknown, ExpMonth: 12, ExpYear: 2030, CVC: "123", Name: "Jane Roe"},
		Amount:     1234,
		Currency:   app.Currency,
	}
	_, err = sb.Charge(ctx, req)
	fmt.Println("charge:", err, provider.IsOutcomeUnknown(err))

	res, _ := sb.LookupCharge(ctx, app.MerchantID, "att_1")
	fmt.Println("lookup:", res.Status)

	clock.Advance(sandbox.ResolveAfter)
	res, _ = sb.LookupCharge(ctx, app.MerchantID, "att_1")
	fmt.Println("lookup 2 minutes later:", res.Status, res.Amount, res.Currency, res.Card.Last4)
	fmt.Println("charges made:", sb.Charges())
	// Output:
	// charge: provider: outcome_unknown: the charge timed out true
	// lookup: pending
	// lookup 2 minutes later: succeeded 1234 EUR 0259
	// charges made: 1
}
