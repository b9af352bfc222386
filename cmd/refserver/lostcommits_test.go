package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLostCommitsDoNotChargeOrRefundTwice restores keelpay's database to a
// copy taken before a confirm and before a refund, while the provider (the
// sandbox, in its own file) keeps what it did: the commits that recorded
// the attempt and the refund's send are lost, as they are when PostgreSQL
// fails over to an asynchronous standby or an operator restores a backup.
// The client's retries with the same keys must not make a second charge
// or a second payout: the retried send derives the same idempotency key
// from the same record and version, and the provider answers it with the
// first outcome.
func TestLostCommitsDoNotChargeOrRefundTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "keelpay.db")
	env := []string{"KEELPAY_ADDR=127.0.0.1:0"}
	s := start(t, dir, env)
	sh := setupShop(t, s, "app_lost", "http://127.0.0.1:9/webhooks")

	// Two intents: one to confirm after the copy, one paid before it, to
	// refund after the copy.
	toPay := must(t, "POST", s.URL+"/v1/payment_intents", sh.sk, intentBody(2500))
	require.Equal(t, http.StatusCreated, toPay.Status, "%v", toPay.Body)
	toRefund := must(t, "POST", s.URL+"/v1/payment_intents", sh.sk, intentBody(1800))
	require.Equal(t, http.StatusCreated, toRefund.Status, "%v", toRefund.Body)
	paid := must(t, "POST", s.URL+"/v1/payment_intents/"+toRefund.Str("id")+"/confirm", sh.pk, confirmBody(toRefund, "4242424242424242"))
	require.Equal(t, "succeeded", paid.Str("status"), "%v", paid.Body)

	backup := takeBackup(t, db)

	confirmKey := []string{"Idempotency-Key", "confirm-lost-1"}
	first := must(t, "POST", s.URL+"/v1/payment_intents/"+toPay.Str("id")+"/confirm", sh.pk, confirmBody(toPay, "4242424242424242"), confirmKey...)
	require.Equal(t, "succeeded", first.Str("status"), "%v", first.Body)
	refundKey := []string{"Idempotency-Key", "refund-lost-1"}
	refund := must(t, "POST", s.URL+"/v1/refunds", sh.sk, map[string]any{"payment_intent": toRefund.Str("id"), "reason": "requested_by_customer"}, refundKey...)
	require.Equal(t, "succeeded", refund.Str("status"), "%v", refund.Body)
	before := sandboxStats(t, s)
	require.Equal(t, 2, before.Charges)
	require.Equal(t, 1, before.Refunds)

	// The database loses everything after the copy; the provider does not.
	restoreBackup(t, s, db, backup)

	s = start(t, dir, env)
	intent := must(t, "GET", s.URL+"/v1/payment_intents/"+toPay.Str("id"), sh.sk, nil)
	require.Equal(t, "requires_payment_method", intent.Str("status"), "the confirm's commit is gone: %v", intent.Body)

	again := must(t, "POST", s.URL+"/v1/payment_intents/"+toPay.Str("id")+"/confirm", sh.pk, confirmBody(toPay, "4242424242424242"), confirmKey...)
	require.Equal(t, "succeeded", again.Str("status"), "%v", again.Body)
	refundAgain := must(t, "POST", s.URL+"/v1/refunds", sh.sk, map[string]any{"payment_intent": toRefund.Str("id"), "reason": "requested_by_customer"}, refundKey...)
	require.Equal(t, "succeeded", refundAgain.Str("status"), "the provider paid the refund out once; the retry must say so: %v", refundAgain.Body)

	after := sandboxStats(t, s)
	require.Equal(t, before.Charges, after.Charges, "a retry after lost commits charged again: %+v", after)
	require.Equal(t, before.Refunds, after.Refunds, "a retry after lost commits paid out again: %+v", after)
	for attempt, n := range after.ChargesByAttempt {
		require.Equal(t, 1, n, "attempt %s", attempt)
	}
	require.Zero(t, after.Voids)
}

// TestLostCommitsThenAnotherPathDoNotPayOutTwice: after the database lost
// its latest commits, an intent may reach the same state by another path
// and at another version. Here its charge's outcome was unknown; before
// the loss the reconciler looked it up twice (pending, then succeeded) and
// the refund was paid out; after it, one look-up finds it succeeded. The
// refund sent again is the same send (its id comes from the charge and
// the send's number, not the intent's version): the provider answers with
// the first payout, and the refund is succeeded, not refused as already
// refunded while the money went back.
func TestLostCommitsThenAnotherPathDoNotPayOutTwice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "keelpay.db")
	env := []string{"KEELPAY_ADDR=127.0.0.1:0"}
	s := start(t, dir, env)
	sh := setupShop(t, s, "app_lostpath", "http://127.0.0.1:9/webhooks")

	pi := must(t, "POST", s.URL+"/v1/payment_intents", sh.sk, intentBody(3100))
	require.Equal(t, http.StatusCreated, pi.Status, "%v", pi.Body)
	// The charge's outcome is unknown; the sandbox settles it as
	// succeeded two minutes later.
	r := must(t, "POST", s.URL+"/v1/payment_intents/"+pi.Str("id")+"/confirm", sh.pk, confirmBody(pi, "4000000000000259"))
	require.Equal(t, "processing", r.Str("status"), "%v", r.Body)

	backup := takeBackup(t, db)

	// Before the loss: a look-up at one minute (still pending), one at
	// five (succeeded), then the refund.
	advanceClock(t, s, 60)
	advanceClock(t, s, 240)
	paid := must(t, "GET", s.URL+"/v1/payment_intents/"+pi.Str("id"), sh.sk, nil)
	require.Equal(t, "succeeded", paid.Str("status"), "%v", paid.Body)
	refundKey := []string{"Idempotency-Key", "refund-lostpath-1"}
	refund := must(t, "POST", s.URL+"/v1/refunds", sh.sk, map[string]any{"payment_intent": pi.Str("id"), "reason": "requested_by_customer"}, refundKey...)
	require.Equal(t, "succeeded", refund.Str("status"), "%v", refund.Body)
	before := sandboxStats(t, s)
	require.Equal(t, 1, before.Refunds)

	restoreBackup(t, s, db, backup)

	// After the loss: one look-up finds the charge succeeded, so the
	// intent is succeeded at another version than before.
	s = start(t, dir, env)
	advanceClock(t, s, 60)
	again := must(t, "GET", s.URL+"/v1/payment_intents/"+pi.Str("id"), sh.sk, nil)
	require.Equal(t, "succeeded", again.Str("status"), "%v", again.Body)

	refundAgain := must(t, "POST", s.URL+"/v1/refunds", sh.sk, map[string]any{"payment_intent": pi.Str("id"), "reason": "requested_by_customer"}, refundKey...)
	require.Equal(t, "succeeded", refundAgain.Str("status"), "the provider paid the refund out once; the retry must say so: %v", refundAgain.Body)
	after := sandboxStats(t, s)
	require.Equal(t, before.Refunds, after.Refunds, "paid out again: %+v", after)
	require.Equal(t, 1, after.Charges)
}

// takeBackup copies the SQLite database db with refserver backup while its
// server runs, and returns the copy's path (the sandbox's file is copied
// beside it and not used: the provider keeps what it did).
func takeBackup(t *testing.T, db string) string {
	t.Helper()
	backup := filepath.Join(filepath.Dir(db), "backup", "copy.db")
	out, err := exec.Command(refserver, "backup", "-db", db, backup).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return backup
}

// restoreBackup kills s and puts the copy backup in place of its database
// db: everything committed after the copy is lost.
func restoreBackup(t *testing.T, s *started, db, backup string) {
	t.Helper()
	require.NoError(t, s.Cmd.Process.Kill())
	_ = s.Cmd.Wait()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		require.NoError(t, os.RemoveAll(db+suffix))
	}
	data, err := os.ReadFile(backup)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(db, data, 0o600))
}
