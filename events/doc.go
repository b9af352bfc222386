// Package events reports changes to stores: it builds event envelopes
// ([NewEvent]), delivers them with the [Dispatcher], and reads them back
// ([Service]).
//
// An event is written by the storage transaction of the change it reports,
// together with its delivery row (the outbox), so there is no event without
// its change and no change without its event. Its JSON envelope is
// serialised once, at creation, and those bytes are what every attempt
// sends.
//
// The Dispatcher claims due deliveries with a lease, posts them signed with
// the store's current webhook secret (Standard Webhooks, see package
// webhooks) to its current webhook URL, and records each attempt: any 2xx
// within 10 seconds succeeds; otherwise it retries after 1 min, 5 min,
// 30 min, 2 h, 6 h and 24 h, and after the seventh failed attempt the
// delivery is failed. Delivery is at least once and unordered; a process
// that dies mid-attempt loses nothing, because the lease lapses and another
// dispatcher claims the delivery again. [Dispatcher.Notify] wakes it at
// once: the services announce every event they commit (their Committed
// hook), so a webhook leaves when its change commits rather than at the
// next poll. The transitions of a delivery after an attempt are pure
// functions (machine.go) with their own tests.
//
// Event objects carry no personal data: the services build them from the
// public form of their objects.
package events
