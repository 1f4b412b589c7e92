package cryptopay

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultTransport(t *testing.T) {
	tr := newTransport(DefaultMaxConnsPerHost)
	require.NotNil(t, tr.TLSClientConfig)
	assert.Equal(t, uint16(tls.VersionTLS12), tr.TLSClientConfig.MinVersion)
	assert.False(t, tr.TLSClientConfig.InsecureSkipVerify)
	assert.GreaterOrEqual(t, tr.MaxIdleConnsPerHost, 64)
	assert.NotSame(t, http.DefaultTransport, tr)
}

// TestTLS11Refused: a server that offers only TLS 1.1 is refused, and the
// failure is permanent (not retried).
func TestTLS11Refused(t *testing.T) {
	var hits int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	srv.StartTLS()
	defer srv.Close()
	c, err := NewClient(srv.URL, testKey, WithRetryPolicy(fastRetry))
	require.NoError(t, err)
	_, err = c.GetBalances(context.Background())
	require.Error(t, err)
	assert.Zero(t, hits)
}

// TestUntrustedCertificateNotRetried: a certificate error is permanent.
func TestUntrustedCertificateNotRetried(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c, err := NewClient(srv.URL, testKey, WithRetryPolicy(fastRetry))
	require.NoError(t, err)
	_, err = c.GetBalances(context.Background())
	require.Error(t, err)
	assert.True(t, isPermanentTransportError(err), "%v", err)
}
