package webhooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/keelpay/keelpay/webhooks"
)

// A delivery signed by the service and verified by a store, with a fixed
// clock so that the output does not depend on when it runs.
func Example() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	sentAt := time.Unix(1614265330, 0)
	body := []byte(`{"id":"evt_1","type":"webhook.test","created_at":"2021-02-25T15:02:10Z","data":{"object":{"message":"test"}}}`)

	signer, err := webhooks.NewSigner(secret)
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	h.Set(webhooks.HeaderID, "evt_1")
	h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(sentAt.Unix(), 10))
	h.Set(webhooks.HeaderSignature, signer.Sign("evt_1", sentAt, body))
	fmt.Println(h.Get(webhooks.HeaderSignature))

	clock := func() time.Time { return sentAt.Add(2 * time.Second) }
	v, err := webhooks.NewVerifier([]string{secret}, webhooks.WithClock(clock))
	if err != nil {
		panic(err)
	}
	fmt.Println("valid:", v.Verify(body, h))
	fmt.Println("tampered:", v.Verify(bytes.ToUpper(body), h))

	late := func() time.Time { return sentAt.Add(time.Hour) }
	v, _ = webhooks.NewVerifier([]string{secret}, webhooks.WithClock(late))
	err = v.Verify(body, h)
	fmt.Println("an hour later:", err, errors.Is(err, webhooks.ErrTimestampOutOfTolerance))
	// Output:
	// v1,iQJKS8yFdaE9ETRvxl+FbSzJHCEMQ/w9TuNKb+J3fK8=
	// valid: <nil>
	// tampered: webhooks: no valid signature
	// an hour later: webhooks: timestamp too old true
}

// While a store rotates its webhook secret, it verifies with both secrets.
func ExampleNewVerifier_rotation() {
	const (
		oldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		newSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	)
	sentAt := time.Unix(1614265330, 0)
	clock := webhooks.WithClock(func() time.Time { return sentAt })
	body := []byte(`{}`)
	ts := strconv.FormatInt(sentAt.Unix(), 10)

	both, _ := webhooks.NewVerifier([]string{newSecret, oldSecret}, clock)
	oldOnly, _ := webhooks.NewVerifier([]string{oldSecret}, clock)
	for _, secret := range []string{oldSecret, newSecret} {
		s, _ := webhooks.NewSigner(secret)
		sig := s.Sign("evt_1", sentAt, body)
		fmt.Println(both.VerifyValues("evt_1", ts, sig, body), oldOnly.VerifyValues("evt_1", ts, sig, body))
	}
	// Output:
	// <nil> <nil>
	// <nil> webhooks: no valid signature
}

// A store's receiver: 204 at once, processing afterwards, repeated deliveries
// dropped. The processing decides with the object's status.
func ExampleNewHandler() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	v, err := webhooks.NewVerifier([]string{secret})
	if err != nil {
		panic(err)
	}
	processed := make(chan string, 10)
	served := make(chan struct{}, 10)
	handler := webhooks.NewHandler(v, func(ctx context.Context, e webhooks.Event, body []byte) {
		var intent struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(e.Data.Object, &intent); err != nil {
			return
		}
		if intent.Status == "succeeded" {
			// Fulfil the order unless it is fulfilled, in one transaction.
			processed <- e.ID + ": fulfil order of " + intent.ID
		}
	}, webhooks.WithDone(func() { served <- struct{}{} }))
	srv := httptest.NewServer(handler)
	defer srv.Close()

	signer, _ := webhooks.NewSigner(secret)
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded","created_at":"2025-03-14T15:09:26Z","data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded"}}}`)
	deliver := func(secretKnown bool) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		now := time.Now()
		req.Header.Set(webhooks.HeaderID, "evt_1")
		req.Header.Set(webhooks.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(webhooks.HeaderSignature, "v1,forged")
		if secretKnown {
			req.Header.Set(webhooks.HeaderSignature, signer.Sign("evt_1", now, body))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
		<-served
	}
	deliver(true)
	deliver(true) // a retry
	deliver(false)
	close(processed)
	for p := range processed {
		fmt.Println(p)
	}
	// Output:
	// 204 No Content
	// 204 No Content
	// 400 Bad Request
	// evt_1: fulfil order of pi_1
}

// A durable receiver: the event is processed before the answer, and a
// failure is answered 500, so the service delivers the event again.
func ExampleNewDurableHandler() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	v, err := webhooks.NewVerifier([]string{secret})
	if err != nil {
		panic(err)
	}
	databaseUp := false
	handler := webhooks.NewDurableHandler(v, func(ctx context.Context, e webhooks.Event, body []byte) error {
		if !databaseUp {
			return errors.New("database is down")
		}
		// In one transaction: record e.ID (return nil if it is there
		// already), fulfil the order.
		fmt.Println("processed", e.ID)
		return nil
	}, webhooks.WithErrorHandler(func(ctx context.Context, e webhooks.Event, err error) {
		fmt.Println("failed", e.ID+":", err)
	}))
	srv := httptest.NewServer(handler)
	defer srv.Close()

	signer, _ := webhooks.NewSigner(secret)
	body := []byte(`{"id":"evt_1","type":"payment_intent.succeeded","created_at":"2025-03-14T15:09:26Z","data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded"}}}`)
	deliver := func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		now := time.Now()
		req.Header.Set(webhooks.HeaderID, "evt_1")
		req.Header.Set(webhooks.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(webhooks.HeaderSignature, signer.Sign("evt_1", now, body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	deliver()
	databaseUp = true
	deliver() // the service's retry
	deliver() // a repeat
	// Output:
	// failed evt_1: database is down
	// 500 Internal Server Error
	// processed evt_1
	// 204 No Content
	// 204 No Content
}

// At shutdown, stop the server, then wait for the events the handler is
// still processing after it answered 204.
func ExampleHandler_Close() {
	v, err := webhooks.NewVerifier([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	if err != nil {
		panic(err)
	}
	handler := webhooks.NewAsyncHandler(v, func(ctx context.Context, e webhooks.Event, body []byte) {
		// record e durably, then act on it
	}, webhooks.WithMaxConcurrent(32))
	srv := &http.Server{Addr: "localhost:0", Handler: handler}
	go func() { _ = srv.ListenAndServe() }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)           // no new requests, the running ones answered
	fmt.Println(handler.Close(ctx)) // the processing still running has ended
	// Output: <nil>
}
