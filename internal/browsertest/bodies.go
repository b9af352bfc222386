package browsertest

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// Bodies keeps every request that reaches a handler, as "METHOD PATH
// BODY", so that a browser test can prove what the server was sent (and
// what it never was: a card number, say). The zero Bodies is ready.
type Bodies struct {
	mu  sync.Mutex
	all []string
}

// Wrap returns h recording each request's body before h reads it.
func (b *Bodies) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.all = append(b.all, r.Method+" "+r.URL.Path+" "+string(body))
		b.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// List returns the requests recorded so far, in order.
func (b *Bodies) List() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.all...)
}
