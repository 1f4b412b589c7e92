package cryptopaytest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cryptopay/cryptopay-go/cryptopaytest"
)

func TestParseUnpaidFields(t *testing.T) {
	for _, m := range []cryptopaytest.UnpaidFields{cryptopaytest.UnpaidNull, cryptopaytest.UnpaidOmit, cryptopaytest.UnpaidZero} {
		got, err := cryptopaytest.ParseUnpaidFields(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	_, err := cryptopaytest.ParseUnpaidFields("nil")
	assert.ErrorIs(t, err, cryptopaytest.ErrInvalid)
}
