// Package service is keelpay in one value: [New] takes one [Config] (a
// storage, a provider, and optional clock, logger, metrics registerer,
// webhook address policy, worker intervals and dispatcher options),
// checks it, and returns a [Service] that gives
//
//   - [Service.Handler], the API to mount on the team's own mux, with
//     [Service.HealthHandler] and [Service.MetricsHandler] to mount where
//     the team wants them (they are not inside the API's prefix);
//   - [Service.Start] and [Service.Stop] for every background worker: the
//     webhook dispatcher, the payment reconciler and expirer, the refund
//     reconciler;
//   - [Service.Subscribe], the events this process commits, typed,
//     delivered after commit.
//
// Every event is written in the transaction of the change it reports, and
// the dispatcher is woken once that transaction commits, so a webhook
// leaves at once rather than at the dispatcher's next poll.
//
// The parts (stores, payments, refunds, events, httpapi) stay public for
// teams that assemble them differently; the Service exposes those it
// built ([Service.Payments], …) for what the API does not cover.
package service
