package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiClient calls keelpay's API with the store's secret key: the store's
// server creates card sessions and payment intents and reads cards; it
// never sees a card number.
type apiClient struct {
	base      string
	secretKey string
	http      *http.Client
}

// apiError is an error answer of keelpay's API.
type apiError struct {
	Status  int
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("keelpay: %d %s: %s", e.Status, e.Code, e.Message)
}

// call sends a JSON request and decodes a 2xx answer into out.
func (c *apiClient) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.secretKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.secretKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error apiError `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		e.Error.Status = resp.StatusCode
		if e.Error.Code == "" {
			e.Error.Code = "http_" + resp.Status
		}
		return &e.Error
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// storeKeys is what setup returns.
type storeKeys struct {
	ID             string `json:"id"`
	Currency       string `json:"currency"`
	PublishableKey string `json:"publishable_key"`
	SecretKey      string `json:"secret_key"`
	WebhookSecret  string `json:"webhook_secret"`
}

// setupStore sets the store of the sandbox application up, or changes it,
// with this server's webhook URL. Both secrets are rotated on every start:
// setup is authenticated by the application's credentials, so the server
// gets a fresh secret key and webhook secret each time and keeps none on
// disk. The previous process's keys stop working.
func setupStore(ctx context.Context, c *apiClient, clientID, clientSecret, webhookURL string) (*storeKeys, error) {
	body := map[string]any{
		"client_id":             clientID,
		"client_secret":         clientSecret,
		"webhook_url":           webhookURL,
		"rotate_secret_key":     true,
		"rotate_webhook_secret": true,
	}
	var keys storeKeys
	var err error
	for range 3 {
		err = c.call(ctx, "POST", "/v1/setup", body, &keys)
		var e *apiError
		// Two setups at once: one wins, the other repeats (docs/errors.md).
		if !errors.As(err, &e) || e.Code != "setup_conflict" {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("set up the store: %w", err)
	}
	if keys.SecretKey == "" || keys.WebhookSecret == "" || keys.PublishableKey == "" {
		return nil, fmt.Errorf("set up the store: the answer lacks a key")
	}
	return &keys, nil
}

// scriptIntegrity fetches the integrity value of keelpay.js.
func scriptIntegrity(ctx context.Context, c *apiClient) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/js/v1/keelpay.js.integrity", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(data))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(v, "sha384-") {
		return "", fmt.Errorf("keelpay.js.integrity: %s", resp.Status)
	}
	return v, nil
}

// customer is the customer object keelpay wants. The demo asks only for
// an id; the rest is a fixed sandbox buyer.
func customer(id string) map[string]string {
	return map[string]string{"id": id, "name": "Sandbox Buyer", "email": "buyer@example.com", "phone": "+358401234567"}
}

// secretRef is an object the browser needs: its id and client_secret.
type secretRef struct {
	ID           string `json:"id"`
	ClientSecret string `json:"client_secret"`
}

func (c *apiClient) createCardSession(ctx context.Context, customerID, origin string) (*secretRef, error) {
	var out secretRef
	err := c.call(ctx, "POST", "/v1/card_sessions", map[string]any{
		"customer": customer(customerID), "page_origins": []string{origin},
	}, &out)
	return &out, err
}

func (c *apiClient) createIntent(ctx context.Context, amount int64, currency, customerID, origin string) (*secretRef, error) {
	var out secretRef
	err := c.call(ctx, "POST", "/v1/payment_intents", map[string]any{
		"amount": amount, "currency": currency, "customer": customer(customerID), "page_origins": []string{origin},
	}, &out)
	return &out, err
}

// card is a saved card as the checkout shows it.
type card struct {
	ID       string `json:"id"`
	Customer struct {
		ID string `json:"id"`
	} `json:"customer"`
	Brand    string `json:"brand"`
	Last4    string `json:"last4"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
	Status   string `json:"status"`
	// CreatedAt is RFC 3339 UTC with seconds: its strings sort by time.
	CreatedAt string `json:"created_at"`
}

// sameCard reports whether c and o are, as far as the store can tell, the
// same card saved twice: same brand, last 4 digits and expiry.
func (c *card) sameCard(o *card) bool {
	return c.Brand == o.Brand && c.Last4 == o.Last4 && c.ExpMonth == o.ExpMonth && c.ExpYear == o.ExpYear
}

// newerThan reports whether c was saved after o (by id when in the same
// second).
func (c *card) newerThan(o *card) bool {
	if c.CreatedAt != o.CreatedAt {
		return c.CreatedAt > o.CreatedAt
	}
	return c.ID > o.ID
}

func (c *apiClient) getCard(ctx context.Context, id string) (*card, error) {
	var out card
	err := c.call(ctx, "GET", "/v1/cards/"+url.PathEscape(id), nil, &out)
	return &out, err
}

// originOf returns the origin (scheme://host[:port]) of an absolute URL.
func originOf(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http or https URL", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

var httpClient = &http.Client{Timeout: 60 * time.Second}
