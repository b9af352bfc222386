// Package httpapi is keelpay's HTTP API as one [net/http.Handler]: the
// package a store mounts on its own server. [New] takes a [Config] with the
// services to serve and returns the handler; everything else (routing,
// keys, strict JSON, limits, Idempotency-Key, the JSON error envelope,
// request ids, logs and metrics) happens inside it. docs/api.md describes
// every route, docs/openapi.json is the same as OpenAPI 3.1.
//
// # Mounting it
//
// The handler serves the services of one
// [github.com/keelpay/keelpay/storage.Storage] (a SQLite file with
// [github.com/keelpay/keelpay/storage/sqlite.Open], or PostgreSQL with
// [github.com/keelpay/keelpay/storage/postgres.Open]) and one
// [github.com/keelpay/keelpay/provider.Provider] (the sandbox of
// [github.com/keelpay/keelpay/provider/sandbox.New] while developing).
// [github.com/keelpay/keelpay/service.New] assembles them and this
// handler from one Config:
//
//	svc, err := service.New(service.Config{Provider: prov, Storage: db})
//	if err != nil {
//		return err
//	}
//	mux.Handle("/payments/", http.StripPrefix("/payments", svc.Handler()))
//
// A program that must stand between the parts builds each with its own
// New (events.New, payments.New, refunds.New, stores.New: each takes a
// Config and returns an error naming what is missing) and passes them to
// [New] in a [Config]; every part is required, and New names a missing
// one in its error.
//
// # Background work
//
// The handler answers requests; the work that happens later belongs to
// the embedding program's lifetime: the webhook dispatcher, the payment
// reconciler and expirer, the refund reconciler and the retention worker.
// service.Service.Start runs them all and Stop stops them; start them on a
// context that ends after the HTTP server has shut down. examples/embed
// shows the whole program.
//
// # Logs and metrics
//
// Config.Logger gets one line per request (request_id, method, route,
// status, duration_seconds) and the detail of internal errors; it never
// gets bodies, keys, secrets or personal data. Config.Metrics is where the
// request metrics are registered; the handler does not serve them (nor a
// health check): mount promhttp and [Health] beside it, where they belong.
// docs/operating.md lists every metric.
//
// # Idempotency-Key
//
// Every POST made with a store's secret key honours an Idempotency-Key
// (docs/api.md describes it for clients). The handler keeps the keys in
// Config.Storage and hands each keyed request's hold on its key, an
// [github.com/keelpay/keelpay/idempotency.Key], to the service it calls,
// in the method's parameters (the Idempotency field of
// [github.com/keelpay/keelpay/payments.IntentParams] and the like). The
// service records each step it commits on the key in the same
// transaction, and stores the answer with its last change: a retry after
// a crash resumes from the last step that committed, and a create that
// committed answers with the answer stored beside the object. A program
// that calls the services directly passes nil and gets none of this.
//
// Answers are the JSON of the objects the services return, rendered by
// one function per object: the same bytes in a response and in an
// event's body. The key stores its answer by rendering the object with
// the function this package gives it, so the answer stored for a key and
// the response are one rendering.
//
// Each route says how it takes a key in its route table entry: not at all
// (GETs, the browser's routes), locked in a commit of its own before the
// handler runs, or taken in the transaction of the service's first
// change, which costs no commit of its own. A new keyed route is an entry
// with its mode, a handler that passes the caller's key to the service
// and writes the object the service returns with the object's JSON
// function, and a service that calls the key's Step and Finish in its
// transactions (see package idempotency).
//
// # Browser routes
//
// The handler also serves the browser script (GET /js/v1/keelpay.js) and
// the hosted card field (GET /elements/v1/card) that buyers type their card
// into; examples/checkout is a store page built on them.
package httpapi
