package statuswriter_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/statuswriter"
)

func TestWriterRemembersTheFirstStatus(t *testing.T) {
	for name, tc := range map[string]struct {
		handle func(w http.ResponseWriter)
		want   int
	}{
		"nothing written":   {func(http.ResponseWriter) {}, 0},
		"a status":          {func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot) }, http.StatusTeapot},
		"a body first":      {func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")) }, http.StatusOK},
		"the first of two":  {func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted); w.WriteHeader(http.StatusNotFound) }, http.StatusAccepted},
		"status, then body": {func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated); _, _ = w.Write([]byte("x")) }, http.StatusCreated},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := &statuswriter.Writer{ResponseWriter: rec}
			tc.handle(w)
			require.Equal(t, tc.want, w.Status)
			require.Same(t, rec, w.Unwrap())
		})
	}
}
