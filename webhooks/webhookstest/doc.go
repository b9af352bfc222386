// Package webhookstest provides a receiver for tests of code that delivers
// webhooks: a [Recorder] is an HTTP server that verifies every delivery with
// [webhooks.Verifier], records it and answers as the test tells it to.
//
//	rec := webhookstest.NewRecorder(t, secret)
//	// ... configure the sender with rec.URL() and trigger an event ...
//	d := rec.Wait(t, 1)[0]
//	require.NoError(t, d.Err)
//
// To test a receiver rather than a sender, let keelpay's dispatcher
// misbehave on purpose within the delivery contract (at least once, in any
// order, same webhook-id and body bytes) with the sandbox's delivery
// faults (provider/sandbox.WebhookFaults; the reference server's
// /sandbox/webhooks/faults),
// and check that the receiver's effects happen once: the receiver example's
// faults_test.go fulfils each order once while every event arrives twice
// and failures arrive after successes. See docs/sandbox.md.
package webhookstest
