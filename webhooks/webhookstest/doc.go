// Package webhookstest provides a receiver for tests of code that delivers
// webhooks: a [Recorder] is an HTTP server that verifies every delivery with
// [webhooks.Verifier], records it and answers as the test tells it to.
//
//	rec := webhookstest.NewRecorder(t, secret)
//	// ... configure the sender with rec.URL() and trigger an event ...
//	d := rec.Wait(t, 1)[0]
//	require.NoError(t, d.Err)
package webhookstest
