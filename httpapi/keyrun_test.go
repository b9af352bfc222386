package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
)

// wrappedWriter is a middleware's ResponseWriter between the flow and a
// handler: a type of its own, with no Unwrap.
type wrappedWriter struct{ http.ResponseWriter }

// A handler's error reaches the flow of its Idempotency-Key through the
// request, whatever wraps the ResponseWriter it writes to: a busy key, and
// the code that decides whether the answer is stored.
func TestKeyRunLearnsTheErrorThroughAWrappedWriter(t *testing.T) {
	a := &api{log: slog.New(slog.DiscardHandler)}
	for _, tc := range []struct {
		err      error
		busy     bool
		code     keelpay.Code
		stored   bool
		wantCode int
	}{
		{fmt.Errorf("payments: commit: %w", idempotency.ErrKeyBusy), true, keelpay.CodeInternalError, false, http.StatusInternalServerError},
		{keelpay.NewError(keelpay.CodeSetupConflict, "conflict"), false, keelpay.CodeSetupConflict, false, http.StatusConflict},
		{keelpay.NewError(keelpay.CodePaymentIntentNotFound, "missing"), false, keelpay.CodePaymentIntentNotFound, true, http.StatusNotFound},
	} {
		run := &keyRun{key: &idempotency.Key{}}
		r := httptest.NewRequest("POST", "/v1/payment_intents", nil)
		r = r.WithContext(withKeyRun(r.Context(), run))
		rec := httptest.NewRecorder()
		rw := &recordingWriter{ResponseWriter: rec}
		a.writeError(wrappedWriter{rw}, r, tc.err)
		require.Equal(t, tc.wantCode, rec.Code)
		require.Equal(t, tc.busy, run.busy, "%v", tc.err)
		require.Equal(t, tc.code, run.code)
		require.Equal(t, tc.stored, storedResponse(rw.status, rec.Header(), run.code), "%v", tc.err)
	}
}
