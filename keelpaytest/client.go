package keelpaytest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
)

func (k *Kit) call(t T, method, p, key string, body any, want int, out any) {
	t.Helper()
	if status, raw := k.do(t, method, p, key, body, out); status != want {
		t.Fatalf("keelpaytest: %s %s: status %d, want %d: %s", method, p, status, want, raw)
	}
}

// do sends a request to the API, decodes the JSON answer into out and
// returns its status and body. It fails the test when there is no JSON
// answer.
func (k *Kit) do(t T, method, p, key string, body any, out any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("keelpaytest: %v", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, k.URL+p, r)
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("keelpaytest: %s %s: %v", method, p, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("keelpaytest: %s %s: %v", method, p, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("keelpaytest: %s %s: status %d: %v: %s", method, p, resp.StatusCode, err, b)
	}
	return resp.StatusCode, b
}
