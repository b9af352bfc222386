package httpprovider

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/keelpay/keelpay/provider"
)

// Defaults of Config.
const (
	// TimeoutDefault bounds each call. It is below the services' own
	// bound (provider.CallTimeoutDefault), so that a call that hangs ends
	// here, as an unknown outcome.
	TimeoutDefault = 10 * time.Second
	// maxConnsDefault is how many idle connections the default client
	// keeps to the server: enough for a busy process's concurrent calls.
	maxConnsDefault = 64
	// maxAnswer bounds the size of an answer read.
	maxAnswer = 64 << 10
)

// Config configures a [Client]. Fields are in alphabetical order.
type Config struct {
	// BaseURL is the server's address: http or https, a host, no user
	// information, and no path other than the one the handler is mounted
	// under (the reference server's: none). Required.
	BaseURL string
	// Client sends the requests. Default: a client of its own that keeps
	// up to 64 idle connections to the server and follows no redirects.
	Client *http.Client
	// Timeout bounds each call, on top of the caller's context. Default
	// [TimeoutDefault].
	Timeout time.Duration
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Client == nil {
		c.Client = &http.Client{
			Transport: &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConns:        maxConnsDefault,
				MaxIdleConnsPerHost: maxConnsDefault,
				// Below the reference server's idle time-out (2 minutes),
				// so that this side closes idle connections first.
				IdleConnTimeout: 90 * time.Second,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	c.Timeout = cmp.Or(max(c.Timeout, 0), TimeoutDefault)
	return c
}

// Client is a [provider.Provider] that calls a provider served with
// [NewHandler]. It does not implement [provider.Notifier]: the process that
// serves the provider receives its notifications. It is safe for concurrent
// use.
type Client struct {
	cfg Config
}

var (
	_ provider.Provider       = (*Client)(nil)
	_ provider.BrowserCapture = (*Client)(nil)
)

// New returns a Client for cfg, or an error when cfg.BaseURL is not an
// http or https URL of a host.
func New(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	u, err := url.Parse(cfg.BaseURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("httpprovider: BaseURL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, errors.New("httpprovider: BaseURL must be an http or https URL with a host")
	case u.User != nil, u.RawQuery != "", u.Fragment != "":
		return nil, errors.New("httpprovider: BaseURL must have no user information, query or fragment")
	}
	return &Client{cfg: cfg}, nil
}

// CheckApplication implements [provider.Provider].
func (c *Client) CheckApplication(ctx context.Context, cr provider.Credentials) (*provider.Application, error) {
	var out application
	if err := c.call(ctx, methodCheckApplication, "", credentials(cr), &out); err != nil {
		return nil, err
	}
	return new(provider.Application(out)), nil
}

// SaveCard implements [provider.Provider].
func (c *Client) SaveCard(ctx context.Context, r provider.SaveCardRequest) (*provider.SavedCard, error) {
	var out savedCard
	if err := c.call(ctx, methodSaveCard, "", saveCardRequest(r), &out); err != nil {
		return nil, err
	}
	return new(provider.SavedCard(out)), nil
}

// Charge implements [provider.Provider]. Without an answer from the
// provider, it returns [provider.KindOutcomeUnknown] (see the package
// documentation).
func (c *Client) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	var out chargeResult
	if err := c.call(ctx, methodCharge, r.AttemptID, toWireCharge(r), &out); err != nil {
		return nil, err
	}
	return out.provider(), nil
}

// LookupCharge implements [provider.Provider].
func (c *Client) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	var out chargeResult
	if err := c.call(ctx, methodLookupCharge, attemptID, attemptRef{merchantID, attemptID}, &out); err != nil {
		return nil, err
	}
	return out.provider(), nil
}

// Void implements [provider.Provider]. Without an answer from the provider,
// it returns [provider.KindOutcomeUnknown].
func (c *Client) Void(ctx context.Context, merchantID, attemptID string) error {
	return c.call(ctx, methodVoid, attemptID, attemptRef{merchantID, attemptID}, &struct{}{})
}

// Refund implements [provider.Provider]. Without an answer from the
// provider, it returns [provider.KindOutcomeUnknown].
func (c *Client) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	var out refundResult
	if err := c.call(ctx, methodRefund, r.AttemptID, refundRequest(r), &out); err != nil {
		return nil, err
	}
	return out.provider(), nil
}

// LookupRefund implements [provider.Provider].
func (c *Client) LookupRefund(ctx context.Context, merchantID, attemptID string) (*provider.RefundResult, error) {
	var out refundResult
	if err := c.call(ctx, methodLookupRefund, attemptID, attemptRef{merchantID, attemptID}, &out); err != nil {
		return nil, err
	}
	return out.provider(), nil
}

// BrowserElement implements [provider.BrowserCapture]: the served
// provider's element (the sandbox's, with its script on the sandbox's own
// server), or nil, with no error, when that provider has none, so that the
// hosted card field takes the card itself.
func (c *Client) BrowserElement(ctx context.Context, merchantID string) (*provider.Element, error) {
	var out browserElement
	if err := c.call(ctx, methodBrowserElement, "", merchantRef{merchantID}, &out); err != nil {
		return nil, err
	}
	if out.Element == nil {
		return nil, nil
	}
	return new(provider.Element(*out.Element)), nil
}

// movesMoney reports whether a call of method may charge, void or refund:
// without an answer, its outcome is unknown rather than "not done".
func movesMoney(method string) bool {
	return method == methodCharge || method == methodVoid || method == methodRefund
}

// call posts in to method and decodes the answer into out. attemptID, when
// set, is the request's Idempotency-Key.
func (c *Client) call(ctx context.Context, method, attemptID string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return &provider.Error{Kind: provider.KindInvalidRequest, Message: "the request cannot be encoded"}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+PathPrefix+method, bytes.NewReader(body))
	if err != nil {
		return notDone(method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if attemptID != "" {
		req.Header.Set("Idempotency-Key", attemptID)
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			// No connection, so the request was never sent.
			return notDone(method, err)
		}
		return noAnswer(method, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return noAnswer(method, err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, out); err != nil {
			return noAnswer(method, fmt.Errorf("the answer is not valid: %w", err))
		}
		return nil
	}
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil {
		if err, ok := eb.Error.err(); ok {
			return err
		}
	}
	cause := fmt.Errorf("HTTP %d without a protocol error", resp.StatusCode)
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && eb.Error.Kind == "" {
		// Refused before any provider saw it: no such endpoint (BaseURL
		// is not a provider's server), a proxy's 408 or 429.
		return notDone(method, cause)
	}
	return noAnswer(method, cause)
}

// notDone is the error of a request that was not carried out.
func notDone(method string, cause error) error {
	return &provider.Error{Kind: provider.KindUnavailable, Message: method + ": the provider was not reached: " + cause.Error()}
}

// noAnswer is the error of a call that may have been carried out: an
// unknown outcome for the calls that move money, unavailable for the rest.
func noAnswer(method string, cause error) error {
	kind := provider.KindUnavailable
	if movesMoney(method) {
		kind = provider.KindOutcomeUnknown
	}
	return &provider.Error{Kind: kind, Message: method + ": no answer from the provider: " + cause.Error()}
}
