package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/client"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// A store's server charges a saved card, reads what it paid and refunds
// it, against a keelpay started by keelpaytest.
func Example() {
	t := &exampleT{}
	defer t.finish()
	kp := keelpaytest.Start(t)
	store := kp.Store(t)
	card := store.SaveCard(t, sandbox.CardVisa) // the browser's part
	ctx := context.Background()

	c, err := client.New(kp.URL, store.SecretKey)
	if err != nil {
		panic(err)
	}
	pi, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{
		Amount: 1999, Currency: "eur", Customer: store.Customer, PaymentMethod: card,
		Reference: "order-1042", IdempotencyKey: "order-1042",
	})
	if err != nil {
		panic(err)
	}
	pi, err = c.ConfirmPaymentIntent(ctx, pi.ID, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(pi.Status, pi.Amount, pi.Currency, pi.PaymentMethod.Brand, pi.PaymentMethod.Last4)

	// The same order again: the stored answer, nothing created twice.
	again, _ := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{
		Amount: 1999, Currency: "eur", Customer: store.Customer, PaymentMethod: card,
		Reference: "order-1042", IdempotencyKey: "order-1042",
	})
	fmt.Println(again.ID == pi.ID, again.Response.IdempotentReplayed)

	ref, err := c.CreateRefund(ctx, &client.RefundParams{PaymentIntent: pi.ID, Reason: "returned"})
	if err != nil {
		panic(err)
	}
	fmt.Println(ref.Amount, ref.Response.StatusCode)

	_, err = c.CancelPaymentIntent(ctx, pi.ID, nil)
	var kerr *keelpay.Error
	if errors.As(err, &kerr) {
		fmt.Println(kerr.Code, kerr.Details["status"])
	}
	// Output:
	// succeeded 1999 EUR visa 4242
	// true true
	// 1999 201
	// payment_intent_not_cancelable succeeded
}

// exampleT stands in for the *testing.T that an Example does not get.
type exampleT struct {
	cleanups []func()
	dirs     []string
}

func (t *exampleT) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Errorf(format string, a ...any) { fmt.Printf("error: "+format+"\n", a...) }
func (t *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleT) Helper()                        {}
func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "keelpay-client-example")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

// finish runs the cleanups, last first, as a test's end does.
func (t *exampleT) finish() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
	for _, dir := range t.dirs {
		_ = os.RemoveAll(dir)
	}
}
