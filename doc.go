// Package keelpay is the vocabulary of the keelpay payment service: the objects
// it stores and reports ([PaymentIntent], [Card], [CardSession], [Refund],
// [Event], [Store]), their statuses, the stable error codes clients decide
// with, the one [Error] type that carries a code, an HTTP status and details,
// and the injectable [Clock].
//
// It imports only the standard library, so that every other package can speak
// it without import cycles: storage adapters return these types, the services
// in payments, refunds, events and stores change them, and httpapi renders
// them as JSON.
//
// A service is assembled from the packages below this one; cmd/refserver shows
// the wiring and examples/embed shows how to mount it in your own server.
package keelpay
