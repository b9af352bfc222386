package httpprovider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/keelpay/keelpay/provider"
)

// maxRequest bounds the size of a request body.
const maxRequest = 16 << 10

// errNoResult stands for a provider that returned neither a result nor an
// error, which says nothing about what it did.
var errNoResult = errors.New("httpprovider: the provider returned no result")

// NewHandler serves p with the protocol of the package documentation at
// POST [PathPrefix] + method name. Mount it at PathPrefix of the server
// that clients reach at their BaseURL. It logs nothing: bodies carry card
// numbers.
func NewHandler(p provider.Provider) http.Handler {
	mux := http.NewServeMux()
	route(mux, methodCheckApplication, func(ctx context.Context, in credentials) (any, error) {
		app, err := p.CheckApplication(ctx, provider.Credentials(in))
		return reply(app, err, func(a provider.Application) any { return application(a) })
	})
	route(mux, methodSaveCard, func(ctx context.Context, in saveCardRequest) (any, error) {
		card, err := p.SaveCard(ctx, provider.SaveCardRequest(in))
		return reply(card, err, func(c provider.SavedCard) any { return savedCard(c) })
	})
	route(mux, methodCharge, func(ctx context.Context, in chargeRequest) (any, error) {
		res, err := p.Charge(ctx, in.provider())
		return reply(res, err, toWireChargeResult)
	})
	route(mux, methodLookupCharge, func(ctx context.Context, in attemptRef) (any, error) {
		res, err := p.LookupCharge(ctx, in.MerchantID, in.AttemptID)
		return reply(res, err, toWireChargeResult)
	})
	route(mux, methodVoid, func(ctx context.Context, in attemptRef) (any, error) {
		if err := p.Void(ctx, in.MerchantID, in.AttemptID); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	})
	route(mux, methodRefund, func(ctx context.Context, in refundRequest) (any, error) {
		res, err := p.Refund(ctx, provider.RefundRequest(in))
		return reply(res, err, toWireRefundResult)
	})
	route(mux, methodLookupRefund, func(ctx context.Context, in attemptRef) (any, error) {
		res, err := p.LookupRefund(ctx, in.MerchantID, in.AttemptID)
		return reply(res, err, toWireRefundResult)
	})
	route(mux, methodBrowserElement, func(ctx context.Context, in merchantRef) (any, error) {
		bc, ok := p.(provider.BrowserCapture)
		if !ok {
			return browserElement{}, nil
		}
		el, err := bc.BrowserElement(ctx, in.MerchantID)
		if err != nil {
			return nil, err
		}
		if el == nil {
			return browserElement{}, nil
		}
		return browserElement{new(element(*el))}, nil
	})
	return mux
}

// reply turns a provider's result or error into the handler's, with conv
// giving the wire form of a result.
func reply[T, W any](res *T, err error, conv func(T) W) (any, error) {
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return nil, errNoResult
	}
	return conv(*res), nil
}

// route serves one method: it decodes the body strictly (an unknown field
// is an invalid request: a client newer than this server must not have
// its fields ignored) and writes the result or the error.
func route[In any](mux *http.ServeMux, method string, call func(context.Context, In) (any, error)) {
	mux.HandleFunc("POST "+PathPrefix+method, func(w http.ResponseWriter, r *http.Request) {
		var in In
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequest))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil || dec.Decode(&struct{}{}) != io.EOF {
			writeJSON(w, kindStatus[provider.KindInvalidRequest], errorBody{wireError{
				Kind: provider.KindInvalidRequest, Message: "the body is not a valid " + method + " request",
			}})
			return
		}
		out, err := call(r.Context(), in)
		if err != nil {
			we, status := toWireError(err)
			writeJSON(w, status, errorBody{we})
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// Only the handler's own types are encoded; they always encode.
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
