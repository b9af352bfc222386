package stripe

import "sync"

const (
	defaultHintSize = 10_000
	// maxNotifying bounds the webhook notifications running at once; a
	// webhook waits for a place, and Stripe sends again one it could not
	// deliver.
	maxNotifying = 8
)

// hints maps an attempt id to the id of the Stripe object that holds it
// (a charge attempt's PaymentIntent, a refund send's PaymentIntent), so that
// a look-up reads that object by id, which Stripe answers consistently,
// instead of searching, which lags. It is a hint only, never authoritative:
// bounded (the oldest hint is forgotten first), lost at a restart, and
// every object read through it is checked to carry the attempt id in its
// metadata; without a hint the adapter searches and probes.
type hints struct {
	mu    sync.Mutex
	max   int
	ids   map[string]string
	order []string // keys in insertion order, a ring of max entries
	next  int
}

func newHints(max int) *hints {
	return &hints{max: max, ids: make(map[string]string, min(max, 1024))}
}

func hintKey(kind, merchantID, attemptID string) string {
	return kind + "\x00" + merchantID + "\x00" + attemptID
}

// put remembers id for the key; an empty id is ignored.
func (h *hints) put(key, id string) {
	if id == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.ids[key]; ok {
		h.ids[key] = id
		return
	}
	if len(h.order) < h.max {
		h.order = append(h.order, key)
	} else {
		delete(h.ids, h.order[h.next])
		h.order[h.next] = key
		h.next = (h.next + 1) % h.max
	}
	h.ids[key] = id
}

func (h *hints) get(key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ids[key]
}

func (h *hints) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ids)
}

// Hint kinds.
const (
	hintCharge = "charge"
	hintRefund = "refund"
)

func (p *Provider) hintCharge(merchantID, attemptID, piID string) {
	if attemptID != "" {
		p.hints.put(hintKey(hintCharge, merchantID, attemptID), piID)
	}
}

func (p *Provider) hintRefund(merchantID, attemptID, piID string) {
	if attemptID != "" {
		p.hints.put(hintKey(hintRefund, merchantID, attemptID), piID)
	}
}
