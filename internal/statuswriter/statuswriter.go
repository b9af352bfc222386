// Package statuswriter wraps an http.ResponseWriter to remember the status
// a handler answered with, for the API's request log and metrics and for
// the test kit's record of a store's webhook handler.
package statuswriter

import "net/http"

// Writer remembers the first status written through it: WriteHeader's, or
// 200 when the handler writes a body first. Status is 0 until then.
type Writer struct {
	http.ResponseWriter
	Status int
}

// WriteHeader records code, the first time, and passes it on.
func (w *Writer) WriteHeader(code int) {
	if w.Status == 0 {
		w.Status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records 200 when nothing was written before, and passes b on.
func (w *Writer) Write(b []byte) (int, error) {
	if w.Status == 0 {
		w.Status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
