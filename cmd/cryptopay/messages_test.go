package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cryptopay "github.com/cryptopay/cryptopay-go"
)

func TestUserError(t *testing.T) {
	plain := errors.New("connection refused")
	assert.NoError(t, userError(nil))
	assert.Same(t, plain, userError(plain), "an error that is not a ValidationError is returned as it is")
	unknown := &cryptopay.ValidationError{Field: "SomethingNew", Reason: "is bad"}
	assert.Same(t, error(unknown), userError(unknown), "a field without a flag keeps the SDK's words")

	tests := []struct{ field, want string }{
		{"Amount", "--amount: must be positive"},
		{"WalletAddress", "--wallet: must be positive"},
		{"id", "the ID argument: must be positive"},
		{"baseURL", "the base URL (--base-url or $CRYPTOPAY_BASE_URL): must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			err := userError(&cryptopay.ValidationError{Field: tt.field, Reason: "must be positive"})
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			var ee *exitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, exitUsage, ee.code)
		})
	}
}
