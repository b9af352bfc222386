package httpapi

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/wire"
)

// MaxBodyBytes is the largest request body accepted (docs/api.md).
const MaxBodyBytes = 16 << 10

// readBody reads a request body of at most MaxBodyBytes, also when it is
// chunked, and checks its media type. An empty body is returned as nil.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxBodyBytes {
		return nil, errTooLarge()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge()
		}
		return nil, keelpay.InvalidRequest("", "invalid_json", "The request body could not be read.")
	}
	ct := r.Header.Get("Content-Type")
	if len(body) == 0 && ct == "" {
		return nil, nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" || (params["charset"] != "" && !equalFoldASCII(params["charset"], "utf-8")) {
		return nil, keelpay.NewError(keelpay.CodeUnsupportedMediaType,
			"Content-Type must be application/json.")
	}
	if len(body) == 0 {
		return nil, nil
	}
	return body, nil
}

func equalFoldASCII(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

func errTooLarge() error {
	return keelpay.NewError(keelpay.CodeRequestTooLarge,
		"The request body is larger than 16 KiB.")
}

// readObject reads and parses a request body that must be a JSON object
// (an empty body is {} when emptyOK).
func readObject(w http.ResponseWriter, r *http.Request, emptyOK bool) (*wire.Object, error) {
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	return wire.Parse(body, emptyOK)
}
