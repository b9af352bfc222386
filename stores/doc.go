// Package stores sets stores up and authenticates their keys.
//
// A store is set up once with its application's credentials at the payment
// provider and a webhook URL ([Service.Setup], behind POST /v1/setup). The
// first setup creates the store and returns its keys: a secret key for the
// store's server (kept here only as a SHA-256 hash), a publishable key for
// the browser, and a webhook secret to verify deliveries. Later setups change
// the webhook URL, rotate either secret, or bind the store to another
// application; a setup that changes nothing is 409 store_already_enabled.
//
// A failed setup stores nothing, so it can be repeated. Two setups of one
// store at the same time cannot both win: each reads the store's version
// before it asks the provider, and only the first to write it succeeds; the
// other gets 409 setup_conflict and may repeat at once.
//
// The application's client secret is kept only as a salted hash: a store's
// owner who presents it again is recognised before any rate limit that
// others can fill, as is one who presents the store's secret key. Setups
// whose credentials are not yet proven have budgets of their own, per
// client id and per client address (see the Setup... limits and
// docs/security.md).
package stores
