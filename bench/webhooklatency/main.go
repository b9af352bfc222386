// Command webhooklatency measures how long a payment's webhook takes to
// reach the store after the confirm was answered, through a running
// reference server: for each payment it creates an intent with the secret
// key, confirms it as the browser does (publishable key, client_secret, the
// sandbox card that succeeds), notes when the confirm's answer arrived, and
// notes when its own receiver got the payment_intent.succeeded webhook,
// verified with package webhooks. It prints p50, p90, p99 and the maximum
// of received minus answered. A negative figure is a webhook that arrived
// before the confirm's answer (the event commits with the payment, before
// the answer is written).
//
//	go run ./cmd/refserver -addr 127.0.0.1:8080 -db /tmp/lat.db &
//	go run ./bench/webhooklatency -keelpay http://127.0.0.1:8080 -payments 500 -concurrency 1
//	go run ./bench/webhooklatency -keelpay http://127.0.0.1:8080 -payments 2000 -concurrency 32
//
// docs/performance.md has the figures.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/keelpay/keelpay/webhooks"
)

func main() {
	base := flag.String("keelpay", "http://127.0.0.1:8080", "the reference server")
	n := flag.Int("payments", 500, "payments to measure")
	conc := flag.Int("concurrency", 1, "payments in flight at once (1: an idle server)")
	clientID := flag.String("client-id", fmt.Sprintf("app_lat%d", time.Now().UnixNano()), "sandbox application of the store")
	flag.Parse()
	if err := run(*base, *clientID, *n, *conc); err != nil {
		log.Fatal(err)
	}
}

// receiver records when each intent's webhook arrived.
type receiver struct {
	mu       sync.Mutex
	verifier *webhooks.Verifier
	arrived  map[string]time.Time
	waiting  map[string]chan struct{}
	invalid  int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	at := time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.verifier == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if err := rc.verifier.Verify(body, r.Header); err != nil {
		rc.invalid++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var e struct {
		Type string `json:"type"`
		Data struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &e)
	w.WriteHeader(http.StatusNoContent)
	if e.Type != "payment_intent.succeeded" {
		return
	}
	id := e.Data.Object.ID
	if _, seen := rc.arrived[id]; seen {
		return
	}
	rc.arrived[id] = at
	if ch, ok := rc.waiting[id]; ok {
		close(ch)
	}
}

// wait returns when the webhook of intent id arrived.
func (rc *receiver) wait(id string, timeout time.Duration) (time.Time, error) {
	rc.mu.Lock()
	if at, ok := rc.arrived[id]; ok {
		rc.mu.Unlock()
		return at, nil
	}
	ch := make(chan struct{})
	rc.waiting[id] = ch
	rc.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(timeout):
		return time.Time{}, fmt.Errorf("no webhook for %s within %v", id, timeout)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.arrived[id], nil
}

func run(base, clientID string, n, conc int) error {
	rc := &receiver{arrived: map[string]time.Time{}, waiting: map[string]chan struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, rc) }()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc * 2}, Timeout: time.Minute}
	call := func(method, path, key string, body any, out any) error {
		data, _ := json.Marshal(body)
		req, err := http.NewRequest(method, base+path, bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
		}
		return json.Unmarshal(raw, out)
	}

	var store struct {
		SecretKey      string `json:"secret_key"`
		PublishableKey string `json:"publishable_key"`
		WebhookSecret  string `json:"webhook_secret"`
	}
	if err := call("POST", "/v1/setup", "", map[string]any{"client_id": clientID, "client_secret": "secret_" + clientID[len("app_"):],
		"webhook_url": "http://" + ln.Addr().String() + "/hooks", "rotate_secret_key": true, "rotate_webhook_secret": true}, &store); err != nil {
		return err
	}
	v, err := webhooks.NewVerifier([]string{store.WebhookSecret})
	if err != nil {
		return err
	}
	rc.mu.Lock()
	rc.verifier = v
	rc.mu.Unlock()

	year := time.Now().Year() + 2
	pay := func(i int) (time.Duration, error) {
		var intent struct {
			ID           string `json:"id"`
			ClientSecret string `json:"client_secret"`
		}
		if err := call("POST", "/v1/payment_intents", store.SecretKey, map[string]any{
			"amount": 1000 + i, "currency": "eur",
			"customer": map[string]any{"id": fmt.Sprintf("cus_%d", i), "name": "Jane Roe", "email": "jane@example.com", "phone": "+4915112345678"},
		}, &intent); err != nil {
			return 0, err
		}
		var confirmed struct {
			Status string `json:"status"`
		}
		if err := call("POST", "/v1/payment_intents/"+intent.ID+"/confirm", store.PublishableKey, map[string]any{
			"client_secret": intent.ClientSecret, "number": "4242424242424242", "exp_month": 12, "exp_year": year, "cvc": "123",
		}, &confirmed); err != nil {
			return 0, err
		}
		answered := time.Now()
		if confirmed.Status != "succeeded" {
			return 0, fmt.Errorf("%s: %s", intent.ID, confirmed.Status)
		}
		arrived, err := rc.wait(intent.ID, 30*time.Second)
		if err != nil {
			return 0, err
		}
		return arrived.Sub(answered), nil
	}

	lat := make([]time.Duration, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Go(func() {
			for i := range next {
				lat[i], errs[i] = pay(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	fmt.Fprintf(os.Stdout, "payments %d, concurrency %d, %.0f payments/s; confirm answered -> webhook received: p50 %v, p90 %v, p99 %v, max %v; invalid signatures %d\n",
		n, conc, float64(n)/took.Seconds(), q(0.50).Round(10*time.Microsecond), q(0.90).Round(10*time.Microsecond),
		q(0.99).Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond), rc.invalid)
	return nil
}
