// Package httpapi is keelpay's HTTP API as one [net/http.Handler]: the
// package a store mounts on its own server. [New] takes a [Config] with the
// services to serve and returns the handler; everything else (routing,
// keys, strict JSON, limits, Idempotency-Key, the JSON error envelope,
// request ids, logs and metrics) happens inside it. docs/api.md describes
// every route, docs/openapi.json is the same as OpenAPI 3.1.
//
// # Mounting it
//
// Build the services on one [github.com/keelpay/keelpay/storage.Storage]
// (a SQLite file with [github.com/keelpay/keelpay/storage/sqlite.Open], or
// PostgreSQL with [github.com/keelpay/keelpay/storage/postgres.Open]) and
// one [github.com/keelpay/keelpay/provider.Provider] (the sandbox of
// [github.com/keelpay/keelpay/provider/sandbox.New] while developing), and
// pass them in a [Config]:
//
//	api, err := httpapi.New(httpapi.Config{
//		Events:   events.NewService(events.Config{Dispatcher: dispatcher, Storage: db}),
//		Payments: payments.New(payments.Config{Provider: prov, Storage: db}),
//		Refunds:  refunds.New(refunds.Config{Provider: prov, Storage: db}),
//		Storage:  db,
//		Stores:   stores.New(stores.Config{Provider: prov, Storage: db}),
//	})
//	mux.Handle("/payments/", http.StripPrefix("/payments", api))
//
// Every part is required: New names a missing one in its error. Most
// programs let service.New assemble all of this from one Config instead.
//
// # Background work
//
// The handler answers requests; the work that happens later runs in the
// services and belongs to the embedding program's lifetime: the webhook
// dispatcher ([github.com/keelpay/keelpay/events.Dispatcher.Run]), the
// payment reconciler and expirer
// ([github.com/keelpay/keelpay/payments.Service.Run]) and the refund
// reconciler ([github.com/keelpay/keelpay/refunds.Service.Run]). Start them
// on a context that ends after the HTTP server has shut down, or let
// service.Service.Start and Stop do it; examples/embed shows the whole
// program.
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
// # Browser routes
//
// The handler also serves the browser script (GET /js/v1/keelpay.js) and
// the hosted card field (GET /elements/v1/card) that buyers type their card
// into; examples/checkout is a store page built on them.
package httpapi
