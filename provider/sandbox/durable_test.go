package sandbox_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// helperEnv names the sandbox file that the test binary, started again as a
// helper process, works on before it waits to be killed.
const helperEnv = "KEELPAY_SANDBOX_HELPER_DB"

// The attempts the helper makes, by attempt id, and the card each charges.
var helperCharges = []struct{ attempt, number string }{
	{"att_visa", sandbox.CardVisa},
	{"att_void", sandbox.CardVisa},
	{"att_declined", sandbox.CardDeclined},
	{"att_3ds_open", sandbox.CardThreeDSecure},
	{"att_3ds_done", sandbox.CardThreeDSecure},
	{"att_unknown", sandbox.CardOutcomeUnknown},
	{"att_unknown_declined", sandbox.CardOutcomeUnknownDeclined},
	{"att_refund_unknown", sandbox.CardRefundOutcomeUnknown},
	{"att_saved", ""}, // the saved card
}

var helperRefunds = []struct{ attempt, charge string }{
	{"rfatt_visa", "att_visa"},
	{"rfatt_unknown", "att_refund_unknown"},
	{"rfatt_again", "att_visa"}, // refused: already refunded
}

// helperReport is what the helper saw, printed as one JSON line once every
// answer was given.
type helperReport struct {
	Charges    map[string]*provider.ChargeResult
	ChargeErrs map[string]string
	Refunds    map[string]*provider.RefundResult
	RefundErrs map[string]string
	Stats      sandbox.Stats
	SavedToken string
	OpenAction string
	DoneAction string
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestMain runs the helper when the test binary is started as one.
func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		if err := runHelper(path); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		select {} // until killed
	}
	os.Exit(m.Run())
}

// runHelper gives every kind of answer the sandbox keeps, reports them on
// stdout and leaves the sandbox open, as a server that is about to be
// killed would.
func runHelper(path string) error {
	ctx := context.Background()
	sb, err := sandbox.Open(ctx, sandbox.Config{Path: path, Clock: keelpaytest.NewClock(start), BaseURL: "https://sandbox.test"})
	if err != nil {
		return err
	}
	rep := helperReport{Charges: map[string]*provider.ChargeResult{}, ChargeErrs: map[string]string{},
		Refunds: map[string]*provider.RefundResult{}, RefundErrs: map[string]string{}}
	saved, err := sb.SaveCard(ctx, *newCard(sandbox.CardMastercard))
	if err != nil {
		return err
	}
	rep.SavedToken = saved.Token
	for _, c := range helperCharges {
		r := provider.ChargeRequest{MerchantID: merchant, AttemptID: c.attempt, Amount: 1234, Currency: "EUR"}
		if c.number == "" {
			r.CardToken = saved.Token
		} else {
			r.NewCard = newCard(c.number)
		}
		res, err := sb.Charge(ctx, r)
		rep.Charges[c.attempt], rep.ChargeErrs[c.attempt] = res, errString(err)
	}
	if err := sb.Void(ctx, merchant, "att_void"); err != nil {
		return err
	}
	if err := sb.AnswerChallenge(ctx, rep.Charges["att_3ds_done"].ActionURL, true); err != nil {
		return err
	}
	rep.OpenAction = rep.Charges["att_3ds_open"].ActionURL
	rep.DoneAction = rep.Charges["att_3ds_done"].ActionURL
	for _, r := range helperRefunds {
		ch, err := sb.LookupCharge(ctx, merchant, r.charge)
		if err != nil {
			return err
		}
		res, err := sb.Refund(ctx, provider.RefundRequest{MerchantID: merchant, AttemptID: r.attempt, ChargeAttemptID: r.charge,
			OrderID: ch.OrderID, Amount: ch.Amount, Currency: ch.Currency})
		rep.Refunds[r.attempt], rep.RefundErrs[r.attempt] = res, errString(err)
	}
	// What a lookup answers now is what a restarted sandbox must answer.
	for _, c := range helperCharges {
		res, err := sb.LookupCharge(ctx, merchant, c.attempt)
		rep.Charges[c.attempt], rep.ChargeErrs[c.attempt] = res, errString(err)
	}
	for _, r := range helperRefunds {
		res, err := sb.LookupRefund(ctx, merchant, r.attempt)
		rep.Refunds[r.attempt], rep.RefundErrs[r.attempt] = res, errString(err)
	}
	if rep.Stats, err = sb.ReadStats(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// startKilledHelper runs the helper on path, waits for its report and kills
// it with SIGKILL: nothing is closed or flushed.
func startKilledHelper(t *testing.T, path string) helperReport {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadBytes('\n')
	require.NoError(t, err, "the helper gave no report")
	var rep helperReport
	require.NoError(t, json.Unmarshal(line, &rep))
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the helper was killed: %v", err)
	return rep
}

func TestSandboxReopenedAfterSIGKILLAnswersAsBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandbox.db")
	rep := startKilledHelper(t, path)
	ctx := t.Context()

	// The helper saw what it should, so the comparison below means something.
	require.Equal(t, provider.ChargeSucceeded, rep.Charges["att_visa"].Status)
	require.True(t, rep.Charges["att_void"].Voided)
	require.Equal(t, provider.ChargeRequiresAction, rep.Charges["att_3ds_open"].Status)
	require.Equal(t, provider.ChargeSucceeded, rep.Charges["att_3ds_done"].Status)
	require.Equal(t, provider.ChargePending, rep.Charges["att_unknown"].Status)
	require.Equal(t, provider.ChargeSucceeded, rep.Charges["att_saved"].Status)
	require.Equal(t, provider.RefundSucceeded, rep.Refunds["rfatt_visa"].Status)
	require.Equal(t, provider.RefundPending, rep.Refunds["rfatt_unknown"].Status)
	require.Equal(t, provider.RefundFailed, rep.Refunds["rfatt_again"].Status)
	wantStats := sandbox.Stats{
		Charges:          5,
		ChargesByAttempt: map[string]int{"att_visa": 1, "att_void": 1, "att_3ds_done": 1, "att_refund_unknown": 1, "att_saved": 1},
		Refunds:          1,
		RefundsByAttempt: map[string]int{"rfatt_visa": 1},
		Voids:            1,
		VoidedByAttempt:  map[string]int{"att_void": 1},
	}
	require.Equal(t, wantStats, rep.Stats)

	// No card number or CVC is in the file.
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	wal, _ := os.ReadFile(path + "-wal")
	for _, number := range []string{sandbox.CardVisa, sandbox.CardThreeDSecure, sandbox.CardMastercard, sandbox.CardOutcomeUnknown} {
		require.NotContains(t, string(raw)+string(wal), number)
	}

	clock := keelpaytest.NewClock(start)
	sb, err := sandbox.Open(ctx, sandbox.Config{Path: path, Clock: clock, BaseURL: "https://sandbox.test"})
	require.NoError(t, err)
	defer func() { _ = sb.Close() }() // on failure; closed below otherwise

	for _, c := range helperCharges {
		res, err := sb.LookupCharge(ctx, merchant, c.attempt)
		require.Equal(t, rep.ChargeErrs[c.attempt], errString(err), c.attempt)
		require.Equal(t, rep.Charges[c.attempt], res, c.attempt)
	}
	for _, r := range helperRefunds {
		res, err := sb.LookupRefund(ctx, merchant, r.attempt)
		require.Equal(t, rep.RefundErrs[r.attempt], errString(err), r.attempt)
		require.Equal(t, rep.Refunds[r.attempt], res, r.attempt)
	}
	require.Equal(t, wantStats, sb.Stats())

	// A repeated charge never charges twice, and a repeated refund never
	// pays out twice, across the restart.
	again, err := sb.Charge(ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_visa", NewCard: newCard(sandbox.CardVisa), Amount: 1234, Currency: "EUR"})
	require.NoError(t, err)
	require.Equal(t, rep.Charges["att_visa"], again)
	require.Equal(t, 1, sb.ChargeCount("att_visa"))
	v := rep.Charges["att_visa"]
	rf, err := sb.Refund(ctx, provider.RefundRequest{MerchantID: merchant, AttemptID: "rfatt_visa", ChargeAttemptID: "att_visa", OrderID: v.OrderID, Amount: v.Amount, Currency: v.Currency})
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, rf.Status)
	require.Equal(t, 1, sb.RefundCount("rfatt_visa"))
	// The saved card still charges.
	saved, err := sb.Charge(ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_saved_2", CardToken: rep.SavedToken, Amount: 1, Currency: "EUR"})
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, saved.Status)
	require.Equal(t, "4444", saved.Card.Last4)

	// The open challenge survived: its page is open and takes an answer.
	srv := httptest.NewServer(sb.ChallengeHandler())
	t.Cleanup(srv.Close)
	sb.SetBaseURL(srv.URL)
	id := rep.OpenAction[strings.LastIndexByte(rep.OpenAction, '/')+1:]
	resp, err := srv.Client().Get(srv.URL + "/sandbox/3ds/" + id)
	require.NoError(t, err)
	p := readPage(t, resp)
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, "Confirm this payment")
	require.NoError(t, sb.AnswerChallenge(ctx, id, true))
	res, err := sb.LookupCharge(ctx, merchant, "att_3ds_open")
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status)
	require.ErrorIs(t, sb.AnswerChallenge(ctx, rep.DoneAction, false), sandbox.ErrChallengeClosed)

	// Unknown outcomes resolve on the clock after the restart.
	clock.Advance(sandbox.ResolveAfter)
	unknown, err := sb.LookupCharge(ctx, merchant, "att_unknown")
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, unknown.Status)
	res, err = sb.LookupCharge(ctx, merchant, "att_unknown_declined")
	require.NoError(t, err)
	require.Equal(t, provider.ChargeFailed, res.Status)
	rres, err := sb.LookupRefund(ctx, merchant, "rfatt_unknown")
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, rres.Status)
	require.Equal(t, 1, sb.ChargeCount("att_unknown"))
	require.Equal(t, 1, sb.RefundCount("rfatt_unknown"))
	after := sb.Stats()
	require.Equal(t, 8, after.Charges)
	require.Equal(t, 2, after.Refunds)

	// What resolved is kept too: a second reopen gives the same answers.
	require.NoError(t, sb.Close())
	require.Equal(t, "ok", integrityCheck(t, path))
	sb, err = sandbox.Open(ctx, sandbox.Config{Path: path, Clock: clock})
	require.NoError(t, err)
	require.Equal(t, after, sb.Stats())
	res, err = sb.LookupCharge(ctx, merchant, "att_unknown")
	require.NoError(t, err)
	require.Equal(t, unknown, res)
}

// integrityCheck reports PRAGMA integrity_check of the sandbox file.
func integrityCheck(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var ok string
	require.NoError(t, db.QueryRow("PRAGMA integrity_check").Scan(&ok))
	return ok
}

// Concurrent calls with one attempt id on a sandbox file charge once, and
// the sandbox opened again on the file still knows it.
func TestConcurrentChargesOnAFileChargeOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sandbox.db")
	ctx := t.Context()
	sb, err := sandbox.Open(ctx, sandbox.Config{Path: path, Clock: keelpaytest.NewClock(start)})
	require.NoError(t, err)
	results := make(chan *provider.ChargeResult, 20)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			res, err := sb.Charge(ctx, provider.ChargeRequest{MerchantID: merchant, AttemptID: "att_once", NewCard: newCard(sandbox.CardVisa), Amount: 500, Currency: "EUR"})
			if err != nil {
				t.Error(err)
				return
			}
			results <- res
		})
	}
	wg.Wait()
	close(results)
	var first *provider.ChargeResult
	for res := range results {
		if first == nil {
			first = res
		}
		require.Equal(t, first, res)
	}
	require.Equal(t, 1, sb.ChargeCount("att_once"))
	require.NoError(t, sb.Close())

	sb, err = sandbox.Open(ctx, sandbox.Config{Path: path, Clock: keelpaytest.NewClock(start)})
	require.NoError(t, err)
	defer sb.Close()
	require.Equal(t, 1, sb.ChargeCount("att_once"))
	require.Equal(t, 1, sb.Charges())
}

func TestOpenFailsOnAPathThatCannotBeCreated(t *testing.T) {
	_, err := sandbox.Open(t.Context(), sandbox.Config{Path: filepath.Join(t.TempDir(), "missing", "dir", "sandbox.db")})
	require.Error(t, err)
	require.Panics(t, func() { sandbox.New(sandbox.Config{Path: filepath.Join(t.TempDir(), "missing", "sandbox.db")}) })
}
