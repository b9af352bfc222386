package sandbox

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/keelpay/keelpay/provider/httpprovider"
)

// statsPath is where APIHandler reports [Stats].
const statsPath = httpprovider.PathPrefix + "stats"

// Stats counts the money that moved, as [Sandbox.Charges], [Sandbox.Voids],
// [Sandbox.Refunds], [Sandbox.ChargeCount] and [Sandbox.RefundCount] do, in
// one snapshot.
type Stats struct {
	// Charges is the number of charges made, voided ones included.
	Charges int `json:"charges"`
	// ChargesByAttempt is the number of charges made with each attempt id
	// that made one (summed over merchants): idempotency keeps each at 1.
	ChargesByAttempt map[string]int `json:"charges_by_attempt"`
	// Refunds is the number of refunds that paid out.
	Refunds int `json:"refunds"`
	// RefundsByAttempt is the number of times each refund attempt id that
	// paid out did so (summed over merchants): idempotency keeps each at 1.
	RefundsByAttempt map[string]int `json:"refunds_by_attempt"`
	// Voids is the number of charges made that were voided.
	Voids int `json:"voids"`
	// VoidedByAttempt is the number of voided charges of each attempt id
	// that made one and had it voided (summed over merchants).
	VoidedByAttempt map[string]int `json:"voided_by_attempt"`
}

// Stats returns the counts as of the clock's now: unknown outcomes that
// resolved since are included. It returns zero counts if the sandbox's
// database fails; see [Sandbox.ReadStats].
func (s *Sandbox) Stats() Stats {
	st, _ := s.ReadStats()
	return st
}

// ReadStats is [Sandbox.Stats] with the error of the sandbox's database.
func (s *Sandbox) ReadStats() (Stats, error) {
	defer s.sendLater(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{ChargesByAttempt: map[string]int{}, RefundsByAttempt: map[string]int{}, VoidedByAttempt: map[string]int{}}
	err := s.inTx(func(t tx) (err error) {
		if err := s.settleAll(t); err != nil {
			return err
		}
		if st.ChargesByAttempt, err = t.countByAttempt("sandbox_charges", "made"); err != nil {
			return err
		}
		if st.RefundsByAttempt, err = t.countByAttempt("sandbox_refunds", "paid"); err != nil {
			return err
		}
		if st.VoidedByAttempt, err = t.countByAttempt("sandbox_charges", "made * voided"); err != nil {
			return err
		}
		for _, n := range st.VoidedByAttempt {
			st.Voids += n
		}
		return nil
	})
	if err != nil {
		return Stats{ChargesByAttempt: map[string]int{}, RefundsByAttempt: map[string]int{}, VoidedByAttempt: map[string]int{}}, err
	}
	for _, n := range st.ChargesByAttempt {
		st.Charges += n
	}
	for _, n := range st.RefundsByAttempt {
		st.Refunds += n
	}
	return st, nil
}

// APIHandler serves the sandbox to other processes with the protocol of
// package [httpprovider], so that their [httpprovider.Client] charges,
// refunds and looks up here: POST /sandbox/provider/v1/{method}. It also
// serves GET /sandbox/provider/v1/stats, the [Stats] as JSON, for tests and
// benchmarks that count the money moved across processes. Mount it at
// "/sandbox/provider/" of the server at the base URL, next to
// [Sandbox.ChallengeHandler], so that the action URLs of 3D Secure
// challenges started through it point at this process. It has no
// authentication: it is for sandbox mode.
func (s *Sandbox) APIHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(httpprovider.PathPrefix, httpprovider.NewHandler(s))
	mux.HandleFunc("GET "+statsPath, func(w http.ResponseWriter, _ *http.Request) {
		st, err := s.ReadStats()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(st)
	})
	return mux
}
