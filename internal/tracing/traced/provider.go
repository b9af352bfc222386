package traced

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/provider"
)

// Provider returns p with a client span for each call: "provider.Charge",
// "provider.LookupCharge", "provider.Void", "provider.Refund",
// "provider.LookupRefund", "provider.SaveCard",
// "provider.CheckApplication" and, for a provider with a browser element
// ([provider.BrowserCapture], which the wrapper keeps),
// "provider.BrowserElement", and for a provider that detaches cards
// ([provider.CardDetacher], which the wrapper keeps too),
// "provider.DetachCard". A span carries the attempt id (the call's
// idempotency key) where the call has one, and the outcome: the charge's
// or refund's status, or the kind of the provider's error. Never the
// card, the credentials or the amounts. With a nil tracer it returns p
// itself.
func Provider(p provider.Provider, tracer trace.Tracer) provider.Provider {
	if tracer == nil {
		return p
	}
	t := tracedProvider{p: p, tracer: tracer}
	// The hosted card field asks for the provider's element: a wrapper
	// that hid it would make the card field take the number. A wrapper
	// that hid the detacher would leave deleted cards chargeable at the
	// provider.
	bc, capture := p.(provider.BrowserCapture)
	cd, detach := p.(provider.CardDetacher)
	switch {
	case capture && detach:
		return struct {
			tracedCapture
			tracedDetach
		}{tracedCapture{tracedProvider: t, bc: bc}, tracedDetach{t: t, cd: cd}}
	case capture:
		return tracedCapture{tracedProvider: t, bc: bc}
	case detach:
		return struct {
			tracedProvider
			tracedDetach
		}{t, tracedDetach{t: t, cd: cd}}
	}
	return t
}

// tracedDetach adds a traced [provider.CardDetacher] to a traced
// provider, with a "provider.DetachCard" span.
type tracedDetach struct {
	t  tracedProvider
	cd provider.CardDetacher
}

func (d tracedDetach) DetachCard(ctx context.Context, merchantID, token string) error {
	ctx, span := d.t.start(ctx, "provider.DetachCard", "")
	err := d.cd.DetachCard(ctx, merchantID, token)
	endProvider(span, "", err)
	return err
}

// tracedCapture is a traced provider that keeps its
// [provider.BrowserCapture], with a "provider.BrowserElement" span.
type tracedCapture struct {
	tracedProvider
	bc provider.BrowserCapture
}

func (t tracedCapture) BrowserElement(ctx context.Context, merchantID string) (*provider.Element, error) {
	ctx, span := t.start(ctx, "provider.BrowserElement", "")
	el, err := t.bc.BrowserElement(ctx, merchantID)
	endProvider(span, "", err)
	return el, err
}

type tracedProvider struct {
	p      provider.Provider
	tracer trace.Tracer
}

func (t tracedProvider) start(ctx context.Context, name, attemptID string) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if attemptID != "" && span.IsRecording() {
		span.SetAttributes(attribute.String(tracing.AttrAttemptID, attemptID))
	}
	return ctx, span
}

// endProvider ends a provider span with its outcome: status when the call
// answered, else the kind of its error.
func endProvider(span trace.Span, status string, err error) {
	if span.IsRecording() {
		switch {
		case err == nil:
			if status != "" {
				span.SetAttributes(attribute.String(tracing.AttrOutcome, status))
			}
		default:
			kind := "error"
			var perr *provider.Error
			switch {
			case errors.As(err, &perr):
				kind = string(perr.Kind)
			case errors.Is(err, provider.ErrUnknownAttempt):
				kind = "unknown_attempt"
			case errors.Is(err, context.DeadlineExceeded):
				kind = "timeout"
			case errors.Is(err, context.Canceled):
				kind = "canceled"
			}
			span.SetAttributes(attribute.String(tracing.AttrOutcome, kind))
			span.SetStatus(codes.Error, kind)
		}
	}
	span.End()
}

func (t tracedProvider) CheckApplication(ctx context.Context, c provider.Credentials) (*provider.Application, error) {
	ctx, span := t.start(ctx, "provider.CheckApplication", "")
	app, err := t.p.CheckApplication(ctx, c)
	endProvider(span, "", err)
	return app, err
}

func (t tracedProvider) SaveCard(ctx context.Context, r provider.SaveCardRequest) (*provider.SavedCard, error) {
	ctx, span := t.start(ctx, "provider.SaveCard", "")
	card, err := t.p.SaveCard(ctx, r)
	endProvider(span, "", err)
	return card, err
}

func (t tracedProvider) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	ctx, span := t.start(ctx, "provider.Charge", r.AttemptID)
	res, err := t.p.Charge(ctx, r)
	endProvider(span, chargeStatus(res), err)
	return res, err
}

func (t tracedProvider) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	ctx, span := t.start(ctx, "provider.LookupCharge", attemptID)
	res, err := t.p.LookupCharge(ctx, merchantID, attemptID)
	endProvider(span, chargeStatus(res), err)
	return res, err
}

func (t tracedProvider) Void(ctx context.Context, merchantID, attemptID string) error {
	ctx, span := t.start(ctx, "provider.Void", attemptID)
	err := t.p.Void(ctx, merchantID, attemptID)
	endProvider(span, "", err)
	return err
}

func (t tracedProvider) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	ctx, span := t.start(ctx, "provider.Refund", r.AttemptID)
	res, err := t.p.Refund(ctx, r)
	endProvider(span, refundStatus(res), err)
	return res, err
}

func (t tracedProvider) LookupRefund(ctx context.Context, merchantID, attemptID string) (*provider.RefundResult, error) {
	ctx, span := t.start(ctx, "provider.LookupRefund", attemptID)
	res, err := t.p.LookupRefund(ctx, merchantID, attemptID)
	endProvider(span, refundStatus(res), err)
	return res, err
}

func chargeStatus(r *provider.ChargeResult) string {
	if r == nil {
		return ""
	}
	return string(r.Status)
}

func refundStatus(r *provider.RefundResult) string {
	if r == nil {
		return ""
	}
	return string(r.Status)
}
