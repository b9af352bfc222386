package keelpaytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/statuswriter"
	"github.com/keelpay/keelpay/webhooks"
)

// HandleWebhooks makes h answer every delivery from now on, after the
// kit's receiver has recorded and verified it: the store's own webhook
// handler, tested with the deliveries keelpay really sends (h gets the
// request as sent, body and signature headers included). Deliveries
// arrive at the path of [WithWebhookPath], "/" by default: a mux that
// routes only "POST /webhooks" needs WithWebhookPath("/webhooks").
// [Kit.RequireHandled] waits until h has finished with a delivery: until
// h returned and, when h (or a handler it routes to) is one of package
// webhooks, until the processing it left running after answering has
// ended too. nil restores the receiver's own answers.
func (k *Kit) HandleWebhooks(h http.Handler) {
	if h == nil {
		k.Webhooks.SetResponder(nil)
		return
	}
	k.Webhooks.SetResponder(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statuswriter.Writer{ResponseWriter: w}
		// The handlers of package webhooks report the processing they go
		// on with after answering; start is called before ServeHTTP
		// returns, so every Add happens before the Wait below.
		var processing sync.WaitGroup
		ctx := webhooks.ContextWithProcessing(r.Context(), func() func() {
			processing.Add(1)
			return sync.OnceFunc(processing.Done)
		})
		// Recorded even when h panics (net/http recovers the panic), so a
		// waiting test sees the status it had written; recorded once the
		// processing is over, without holding keelpay's request.
		defer func() {
			status := sw.Status
			if status == 0 {
				status = http.StatusOK
			}
			d := Handled{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Status: status}
			go func() {
				processing.Wait()
				k.mu.Lock()
				k.handled = append(k.handled, d)
				close(k.nextDone)
				k.nextDone = make(chan struct{})
				k.mu.Unlock()
			}()
		}()
		h.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// Handled is a delivery that the store's handler of [Kit.HandleWebhooks]
// has finished with.
type Handled struct {
	// Path is the request's path: the path of [WithWebhookPath].
	Path   string
	Header http.Header
	Body   []byte
	// Status is what the handler answered (200 when it wrote nothing).
	Status int
}

// Event decodes the body as an event envelope.
func (h Handled) Event() (webhooks.Event, error) {
	var e webhooks.Event
	err := json.Unmarshal(h.Body, &e)
	return e, err
}

// RequireHandled waits until the store's own handler ([Kit.HandleWebhooks])
// has finished with a delivery of an event of type typ about objectID (a
// payment intent, refund or card id), and returns it with the status the
// handler answered. Unlike [Kit.RequireEvent], which returns once the
// kit's receiver has the delivery, it returns only after the handler's
// work is over, so what the handler did (an order fulfilled, a row
// written) can be checked right after. For a handler of package webhooks
// (webhooks.NewHandler, NewAsyncHandler, NewDurableHandler, also behind
// the store's mux or middleware) that is after the store's function
// returned, even when the handler answered 204 before calling it; for any
// other http.Handler, after ServeHTTP returned: a handler of the store's
// own that goes on on a goroutine must be waited for by the test. It
// fails the test if no such delivery is handled within the kit's wait
// timeout ([WithWaitTimeout]).
func (k *Kit) RequireHandled(t T, typ keelpay.EventType, objectID string) Handled {
	t.Helper()
	deadline := time.NewTimer(k.wait)
	defer deadline.Stop()
	for {
		k.mu.Lock()
		got, next := append([]Handled(nil), k.handled...), k.nextDone
		k.mu.Unlock()
		for _, h := range got {
			if e, err := h.Event(); err == nil && e.Type == string(typ) && objectOf(e) == objectID {
				return h
			}
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("keelpaytest: the store's handler finished with no %s event for %s after %v (it finished with %d deliveries)",
				typ, objectID, k.wait, len(got))
			return Handled{}
		}
	}
}
