package cryptopay

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"
)

const (
	testBase = "https://api.cryptopay.test"
	testKey  = "sk_test_4f9c2b7e1d0a"
)

// fastRetry keeps retry waits in milliseconds so tests stay quick.
var fastRetry = RetryPolicy{MaxRetries: 3, MinWait: time.Millisecond, MaxWait: 5 * time.Millisecond}

// setup returns a client whose transport is a fresh httpmock transport (no
// global state, safe for parallel tests).
func setup(t *testing.T, opts ...Option) (*Client, *httpmock.MockTransport) {
	t.Helper()
	mt := httpmock.NewMockTransport()
	all := append([]Option{WithHTTPClient(&http.Client{Transport: mt}), WithRetryPolicy(fastRetry)}, opts...)
	c, err := NewClient(testBase, testKey, all...)
	require.NoError(t, err)
	return c, mt
}

// jsonResponder answers status with body and records the request it saw.
func jsonResponder(status int, body string, seen *capturedRequest) httpmock.Responder {
	return func(r *http.Request) (*http.Response, error) {
		if seen != nil {
			seen.capture(r)
		}
		resp := httpmock.NewStringResponse(status, body)
		resp.Header.Set("Content-Type", "application/json")
		return resp, nil
	}
}

type capturedRequest struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
}

func (c *capturedRequest) capture(r *http.Request) {
	c.Method, c.Path, c.RawQuery, c.Header = r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone()
	if r.Body != nil {
		c.Body, _ = io.ReadAll(r.Body)
	}
}

// bodyMap decodes a captured JSON body keeping numbers as json.Number.
func (c *capturedRequest) bodyMap(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(c.Body))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	return m
}

func readAll(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }
