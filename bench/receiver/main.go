// Command receiver is the webhook receiver of the load benchmarks
// (bench/run-multi.sh): it verifies every delivery's signature with package
// webhooks, as a store would, answers with the status it was told (204 by
// default) and counts what it received.
//
//	go run ./bench/receiver -addr 127.0.0.1:0
//
// It prints "listening on http://<address>" once it listens.
// Deliveries go to any path but /control/. The driver controls it with:
//
//	POST /control/secrets  ["whsec_...", ...]   verify with these from now on
//	POST /control/status   {"status": 503}      answer valid deliveries so
//	POST /control/reset                         forget what was counted
//	GET  /control/stats                         what was counted, as JSON
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/keelpay/keelpay/webhooks"
)

// stats is what GET /control/stats answers. Times are Unix nanoseconds.
type stats struct {
	Requests int `json:"requests"`
	// Invalid counts deliveries whose signature did not verify (answered
	// 400).
	Invalid int `json:"invalid"`
	// OK and Failed count the valid deliveries answered 2xx and otherwise;
	// the Distinct counts are of event ids.
	OK             int   `json:"ok"`
	Failed         int   `json:"failed"`
	DistinctOK     int   `json:"distinct_ok"`
	DistinctFailed int   `json:"distinct_failed"`
	FirstOK        int64 `json:"first_ok"`
	LastOK         int64 `json:"last_ok"`
	LastRequest    int64 `json:"last_request"`
}

type receiver struct {
	mu       sync.Mutex
	verifier *webhooks.Verifier
	status   int
	st       stats
	ok       map[string]bool
	failed   map[string]bool
}

func (rc *receiver) reset() {
	rc.st = stats{}
	rc.ok, rc.failed = map[string]bool{}, map[string]bool{}
}

func (rc *receiver) deliver(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	now := time.Now().UnixNano()
	rc.mu.Lock()
	v, status := rc.verifier, rc.status
	rc.mu.Unlock()
	switch {
	case err != nil:
	case v == nil:
		err = errors.New("no secrets set")
	default:
		err = v.Verify(body, r.Header)
	}
	id := r.Header.Get(webhooks.HeaderID)

	rc.mu.Lock()
	rc.st.Requests++
	rc.st.LastRequest = now
	switch {
	case err != nil:
		rc.st.Invalid++
		status = http.StatusBadRequest
	case status >= 200 && status < 300:
		rc.st.OK++
		if rc.st.FirstOK == 0 {
			rc.st.FirstOK = now
		}
		rc.st.LastOK = now
		rc.ok[id] = true
		rc.st.DistinctOK = len(rc.ok)
	default:
		rc.st.Failed++
		rc.failed[id] = true
		rc.st.DistinctFailed = len(rc.failed)
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	rc := &receiver{status: http.StatusNoContent}
	rc.reset()
	mux := http.NewServeMux()
	mux.HandleFunc("/", rc.deliver)
	mux.HandleFunc("POST /control/secrets", func(w http.ResponseWriter, r *http.Request) {
		var secrets []string
		if err := json.NewDecoder(r.Body).Decode(&secrets); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		v, err := webhooks.NewVerifier(secrets)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.verifier = v
		rc.mu.Unlock()
	})
	mux.HandleFunc("POST /control/status", func(w http.ResponseWriter, r *http.Request) {
		var b struct{ Status int }
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Status < 200 || b.Status > 599 {
			http.Error(w, "want {\"status\": 200..599}", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.status = b.Status
		rc.mu.Unlock()
	})
	mux.HandleFunc("POST /control/reset", func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.reset()
		rc.mu.Unlock()
	})
	mux.HandleFunc("GET /control/stats", func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		st := rc.st
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
