package sandbox

import (
	"encoding/json"
	"net/http"

	"github.com/keelpay/keelpay/provider/httpprovider"
)

// statsPath is where APIHandler reports [Stats].
const statsPath = httpprovider.PathPrefix + "stats"

// Stats counts the money that moved, as [Sandbox.Charges], [Sandbox.Voids],
// [Sandbox.Refunds] and [Sandbox.ChargeCount] do, in one snapshot.
type Stats struct {
	// Charges is the number of charges made, voided ones included.
	Charges int `json:"charges"`
	// ChargesByAttempt is the number of charges made with each attempt id
	// that made one (summed over merchants): idempotency keeps each at 1.
	ChargesByAttempt map[string]int `json:"charges_by_attempt"`
	// Refunds is the number of refunds that paid out.
	Refunds int `json:"refunds"`
	// Voids is the number of charges made that were voided.
	Voids int `json:"voids"`
}

// Stats returns the counts as of the clock's now: unknown outcomes that
// resolved since are included.
func (s *Sandbox) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleAll()
	st := Stats{Charges: s.charged, ChargesByAttempt: map[string]int{}, Refunds: s.refunded, Voids: s.voided}
	for k, c := range s.charges {
		if c.made > 0 {
			st.ChargesByAttempt[k.attemptID] += c.made
		}
	}
	return st
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
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(s.Stats())
	})
	return mux
}
