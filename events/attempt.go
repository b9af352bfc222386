package events

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/webhooks"
)

// attempt posts one delivery and returns its result. ok is false when ctx
// ended during the attempt: then nothing is recorded.
func (d *Dispatcher) attempt(ctx context.Context, job *storage.DeliveryJob) (storage.DeliveryResult, bool) {
	started := d.cfg.Clock.Now()
	var hold time.Duration
	var fail string
	var twice bool
	if d.hooks.interceptor != nil {
		hold, fail, twice = d.hooks.interceptor.Intercept(job, started)
	}
	switch {
	case hold > 0:
		// No attempt: the delivery is due again once the hold is over.
		return storage.DeliveryResult{EventID: job.EventID, LeaseToken: job.LeaseToken,
			Delivery: keelpay.Delivery{Status: keelpay.DeliveryPending, NextAttemptAt: started.Add(hold)}}, true
	case fail != "":
		return d.result(job, started, 0, keelpay.FailureConnectionError, fail, 0), true
	}
	var span trace.Span
	if d.tracer != nil {
		ctx, span = d.tracer.Start(ctx, "webhook.attempt", trace.WithSpanKind(trace.SpanKindClient))
		defer span.End()
	}
	wall := time.Now()
	post := d.post
	if twice {
		post = d.postTwice
	}
	d.limits.begin(job.StoreID)
	status, failure, body, err := post(ctx, job, wall)
	took := time.Since(wall)
	d.limits.end(ctx, job.StoreID, ctx.Err() == nil, string(failure))
	if ctx.Err() != nil {
		if span != nil && span.IsRecording() {
			span.SetAttributes(attemptAttrs(job, job.Attempts+1, "interrupted", status)...)
		}
		return storage.DeliveryResult{}, false
	}
	res := d.result(job, started, status, failure, body, took)
	d.report(ctx, span, job, res.Delivery.Attempts, status, failure, took, err)
	return res, true
}

// report tells of a finished attempt: on its span, in the metrics and in
// the log, with ids and the outcome only.
func (d *Dispatcher) report(ctx context.Context, span trace.Span, job *storage.DeliveryJob, attempt, status int, failure keelpay.DeliveryFailure, took time.Duration, err error) {
	outcome := string(failure)
	if failure == "" {
		outcome = "succeeded"
	}
	if span != nil && span.IsRecording() {
		span.SetAttributes(attemptAttrs(job, attempt, outcome, status)...)
		if failure != "" {
			span.SetStatus(codes.Error, outcome)
		}
	}
	if d.metrics != nil {
		d.metrics.attempts.WithLabelValues(outcome).Inc()
		d.metrics.latency.WithLabelValues(outcome).Observe(took.Seconds())
	}
	// Successes are routine (thousands a second); failures are what an
	// operator looks for.
	level := slog.LevelDebug
	if failure != "" {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("event_id", job.EventID), slog.String("store_id", job.StoreID),
		slog.Int("attempt", attempt), slog.String("outcome", outcome), slog.Int("status_code", status),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", redact(err)))
	}
	d.cfg.Logger.LogAttrs(ctx, level, "webhook attempt", attrs...)
}

// attemptAttrs are the attributes of an attempt's span: ids, numbers and
// the outcome, never the URL, the body or the signature.
func attemptAttrs(job *storage.DeliveryJob, attempt int, outcome string, status int) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(tracing.AttrEventID, job.EventID),
		attribute.String(tracing.AttrEventType, string(job.Type)),
		attribute.String(tracing.AttrStoreID, job.StoreID),
		attribute.Int(tracing.AttrAttempt, attempt),
		attribute.String(tracing.AttrOutcome, outcome),
	}
	if status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", status))
	}
	return attrs
}

// result is the record of one attempt: the delivery's new state by the
// retry schedule, and the attempt for the history.
func (d *Dispatcher) result(job *storage.DeliveryJob, started time.Time, status int, failure keelpay.DeliveryFailure, body string, took time.Duration) storage.DeliveryResult {
	del := afterAttempt(job.Attempts, started, status, failure)
	att := &keelpay.DeliveryAttempt{
		ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: job.EventID, StoreID: job.StoreID,
		StartedAt: started, Duration: took, StatusCode: status, Failure: failure, ResponseBody: body,
	}
	return storage.DeliveryResult{EventID: job.EventID, LeaseToken: job.LeaseToken, Delivery: del, Attempt: att}
}

// post sends the request and classifies the outcome: failure is "" for a
// 2xx within the time-out. body is the start of the receiver's answer.
func (d *Dispatcher) post(ctx context.Context, job *storage.DeliveryJob, wall time.Time) (int, keelpay.DeliveryFailure, string, error) {
	signer, err := d.signer(job.WebhookSecret)
	if err != nil {
		return 0, keelpay.FailureConnectionError, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.WebhookURL, bytes.NewReader(job.Body))
	if err != nil {
		return 0, keelpay.FailureConnectionError, "", err
	}
	sig := signer.AppendSignature(make([]byte, 0, 48), job.EventID, wall, job.Body)
	h := req.Header
	h[webhooks.HeaderID] = []string{job.EventID}
	h[webhooks.HeaderTimestamp] = []string{strconv.FormatInt(wall.Unix(), 10)}
	h[webhooks.HeaderSignature] = []string{string(sig)}
	h[webhooks.HeaderEventType] = []string{string(job.Type)}
	h["Content-Type"] = []string{"application/json"}
	h["User-Agent"] = []string{UserAgent}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, classify(err), "", err
	}
	// A receiver is only asked for its status; the start of its answer is
	// kept for debugging, and a little more read so the connection can be
	// reused.
	head := make([]byte, keelpay.AttemptBodyMax)
	n, _ := io.ReadFull(resp.Body, head)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	body := AttemptBody(head[:n])
	return resp.StatusCode, judge(resp.StatusCode), body, nil
}

// AttemptBody makes the start of a receiver's answer into the text kept in
// an attempt: at most keelpay.AttemptBodyMax bytes, cut at a character
// boundary, invalid UTF-8 (and NUL, which not every database stores in
// text) replaced by U+FFFD.
func AttemptBody(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	for len(s) > keelpay.AttemptBodyMax {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func (d *Dispatcher) signer(secret string) (*webhooks.Signer, error) {
	return d.signers.get(secret)
}

// signerCacheMax bounds the signers a dispatcher keeps: more than the
// stores whose webhooks one dispatcher sends at once, so that a full cache
// is rare, and small enough that secrets rotated away do not pile up.
const signerCacheMax = 4096

// signerCache keeps the signer of each webhook secret in use, so that a
// delivery does not decode its secret again. It holds at most
// signerCacheMax signers: when full, it starts again empty, and a secret
// that was rotated away is forgotten then at the latest.
type signerCache struct {
	mu sync.Mutex
	m  map[string]*webhooks.Signer
}

func (c *signerCache) get(secret string) (*webhooks.Signer, error) {
	c.mu.Lock()
	s, ok := c.m[secret]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := webhooks.NewSigner(secret)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= signerCacheMax {
		c.m = make(map[string]*webhooks.Signer)
	}
	c.m[secret] = s
	return s, nil
}

func (c *signerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// classify names why a request got no response.
func classify(err error) keelpay.DeliveryFailure {
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return keelpay.FailureTimeout
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr),
		errors.As(err, &recordErr), errors.As(err, &alert):
		return keelpay.FailureTLSError
	default:
		return keelpay.FailureConnectionError
	}
}

// redact returns the error without the URL that net/http puts in it: a
// webhook URL may carry a store's token.
func redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

// postTwice posts a delivery and, when the receiver accepted it, posts
// the same request again: same webhook-id, same body bytes. The first
// answer is the one recorded.
func (d *Dispatcher) postTwice(ctx context.Context, job *storage.DeliveryJob, wall time.Time) (int, keelpay.DeliveryFailure, string, error) {
	status, failure, body, err := d.post(ctx, job, wall)
	if failure == "" && err == nil && status >= http.StatusOK {
		_, _, _, _ = d.post(ctx, job, wall)
	}
	return status, failure, body, err
}
