package httpapi

import (
	"net/http"

	"github.com/keelpay/keelpay"
)

// statuses is the one table from an error code to its HTTP status. The
// services return codes only; docs/errors.md and docs/openapi.json are
// tested against this table.
var statuses = map[keelpay.Code]int{
	keelpay.CodeInvalidRequest:               http.StatusBadRequest,
	keelpay.CodeInvalidAPIKey:                http.StatusUnauthorized,
	keelpay.CodeInvalidCredentials:           http.StatusUnauthorized,
	keelpay.CodeNotFound:                     http.StatusNotFound,
	keelpay.CodeCardSessionNotFound:          http.StatusNotFound,
	keelpay.CodeCardNotFound:                 http.StatusNotFound,
	keelpay.CodePaymentIntentNotFound:        http.StatusNotFound,
	keelpay.CodeRefundNotFound:               http.StatusNotFound,
	keelpay.CodeEventNotFound:                http.StatusNotFound,
	keelpay.CodeMethodNotAllowed:             http.StatusMethodNotAllowed,
	keelpay.CodeStoreAlreadyEnabled:          http.StatusConflict,
	keelpay.CodeClientIDInUse:                http.StatusConflict,
	keelpay.CodeSetupConflict:                http.StatusConflict,
	keelpay.CodeCardUnavailable:              http.StatusConflict,
	keelpay.CodePaymentIntentNotCancelable:   http.StatusConflict,
	keelpay.CodePaymentIntentUnexpectedState: http.StatusConflict,
	keelpay.CodeCardSessionUnexpectedState:   http.StatusConflict,
	keelpay.CodePaymentIntentNotRefundable:   http.StatusConflict,
	keelpay.CodeRefundExists:                 http.StatusConflict,
	keelpay.CodeRefundInProgress:             http.StatusConflict,
	keelpay.CodeIdempotencyKeyInUse:          http.StatusConflict,
	keelpay.CodeRequestTooLarge:              http.StatusRequestEntityTooLarge,
	keelpay.CodeUnsupportedMediaType:         http.StatusUnsupportedMediaType,
	keelpay.CodeMissingRoles:                 http.StatusUnprocessableEntity,
	keelpay.CodeClientAppNotFound:            http.StatusUnprocessableEntity,
	keelpay.CodeCardRejected:                 http.StatusUnprocessableEntity,
	keelpay.CodeIdempotencyKeyReused:         http.StatusUnprocessableEntity,
	keelpay.CodeRateLimited:                  http.StatusTooManyRequests,
	keelpay.CodeInternalError:                http.StatusInternalServerError,
	keelpay.CodeProviderAPIUnavailable:       http.StatusServiceUnavailable,
	keelpay.CodePlatformAccessPending:        http.StatusServiceUnavailable,
	keelpay.CodePlatformCertificateMismatch:  http.StatusServiceUnavailable,
	keelpay.CodeDatabaseUnavailable:          http.StatusServiceUnavailable,
}

// Status is the HTTP status of an error code, from the one table the API
// answers with: 500 for a code the table does not have. Handlers mounted
// next to the API (the reference server's sandbox routes) answer with it
// too.
func Status(code keelpay.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}
