package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go"
)

func TestWebhookURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, order string
		secret            []byte
		want              string // prefix of the URL; "" means an error
	}{
		{"plain", "https://shop.example/hook", "o-1", whSecret, "https://shop.example/hook?token="},
		{"keeps query", "https://shop.example/hook?shop=7&x=a%20b", "o-1", whSecret, "https://shop.example/hook?shop=7&x=a%20b&token="},
		{"http loopback", "http://127.0.0.1:8080/hook", "o-1", whSecret, "http://127.0.0.1:8080/hook?token="},
		{"unicode order", "https://shop.example/hook", "заказ/1?&", whSecret, "https://shop.example/hook?token="},
		{"short secret", "https://shop.example/hook", "o-1", []byte("too-short"), ""},
		{"nil secret", "https://shop.example/hook", "o-1", nil, ""},
		{"zero secret", "https://shop.example/hook", "o-1", make([]byte, 32), ""},
		{"empty order", "https://shop.example/hook", "", whSecret, ""},
		{"order not UTF-8", "https://shop.example/hook", "wd-\xff\xfe-42", whSecret, ""},
		{"relative", "/hook", "o-1", whSecret, ""},
		{"no host", "https:///hook", "o-1", whSecret, ""},
		{"ftp", "ftp://shop.example/hook", "o-1", whSecret, ""},
		{"fragment", "https://shop.example/hook#x", "o-1", whSecret, ""},
		{"has token", "https://shop.example/hook?token=abc", "o-1", whSecret, ""},
		{"bad URL", "https://shop.example/%zz", "o-1", whSecret, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := URL(tt.base, tt.secret, tt.order)
			if tt.want == "" {
				require.ErrorIs(t, err, cryptopay.ErrInvalidParams)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(got, tt.want), got)
			u, err := url.Parse(got)
			require.NoError(t, err)
			tok := u.Query().Get("token")
			// The documented construction, computed independently.
			m := hmac.New(sha256.New, tt.secret)
			m.Write([]byte("cryptopay-go webhook v1\x00" + tt.order))
			assert.Equal(t, base64.RawURLEncoding.EncodeToString(m.Sum(nil)), tok)
		})
	}
}

func TestWebhookURLTokenDependsOnSecretAndOrder(t *testing.T) {
	t.Parallel()
	tok := func(secret []byte, order string) string {
		u, err := URL("https://a.example/h", secret, order)
		require.NoError(t, err)
		pu, _ := url.Parse(u)
		return pu.Query().Get("token")
	}
	other := append(bytes.Clone(whSecret), 'x')
	assert.Equal(t, tok(whSecret, "o-1"), tok(whSecret, "o-1"))
	assert.NotEqual(t, tok(whSecret, "o-1"), tok(whSecret, "o-2"))
	assert.NotEqual(t, tok(whSecret, "o-1"), tok(other, "o-1"))
}

func TestQueryToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		want  string
		ok    bool
	}{
		{"token=abc", "abc", true},
		{"shop=7&token=abc&x=1", "abc", true},
		{"token=a%2Db", "a-b", true},
		{"tok%65n=abc", "abc", true},
		{"token=abc&token=abc", "", false},
		{"token=abc&tok%65n=abc", "", false},
		{"token=", "", false},
		{"token", "", false},
		{"", "", false},
		{"token=%zz", "", false},
		{"token=abc;x=1", "", false},
		{"x=1;token=abc", "", false},
		{"Token=abc", "", false},
	}
	for _, tt := range tests {
		got, ok := queryToken(tt.query)
		assert.Equal(t, tt.ok, ok, tt.query)
		if ok {
			assert.Equal(t, tt.want, got, tt.query)
		}
	}
}
